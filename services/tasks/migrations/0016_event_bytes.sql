-- Up Migration
-- Each stored event's size as JSON text, measured once when it is written. Pages of the events
-- feed and of the live stream's replay stop at a byte budget; measured at read time (the jsonb
-- written out as text), every candidate event of a page was converted, up to 500 of them of up to
-- 700 kB each, to find the one or two that fit. Events written before this have none and are
-- measured when read, until the 30 days' retention has taken them.
alter table events add column bytes integer;

create or replace function outbox_to_events() returns trigger language plpgsql set search_path from current as $$
begin
  insert into events (id, organization_id, type, created_at, payload, bytes)
  select event_id, organization_id, type, (payload->>'created_at')::timestamptz, payload, octet_length(payload::text) from inserted
  on conflict (id) do nothing;
  return null;
end $$;
