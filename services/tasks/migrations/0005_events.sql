-- Up Migration
-- The events feed (GET /v1/events, issue 16): every task event as the outbox carried it (the same
-- id, the same envelope), kept 30 days (the service's sweep deletes older ones). A trigger copies
-- the outbox's new rows in the writing statement itself, so the feed holds exactly the events the
-- stream gets, committed with the change: nothing writes one without the other.
create table events (
  id              text primary key,
  organization_id text not null,
  type            text not null,
  created_at      timestamptz not null,
  payload         jsonb not null
);
-- The feed: an organization's events, newest first (keyset pages on created_at, id).
create index events_feed_idx on events (organization_id, created_at desc, id desc);
-- The retention sweep.
create index events_created_idx on events (created_at);

-- One insert per writing statement (a group-committed create writes many outbox rows at once).
-- search_path is the migration's (the service's schema), whoever runs the statement.
create function outbox_to_events() returns trigger language plpgsql set search_path from current as $$
begin
  insert into events (id, organization_id, type, created_at, payload)
  select event_id, organization_id, type, (payload->>'created_at')::timestamptz, payload from inserted
  on conflict (id) do nothing;
  return null;
end $$;
create trigger outbox_to_events after insert on outbox referencing new table as inserted
  for each statement execute function outbox_to_events();
