-- Up Migration
-- Comments on tasks: not task content (no version, no history, no ETag), so a table of their own,
-- read oldest first per task. Gone with their task when a task is ever erased.
create table comments (
  id              text primary key,
  organization_id text not null,
  task_number     bigint not null,
  author_id       text not null,
  body            text not null,
  mention_ids     text[] not null default '{}',
  created_at      timestamptz not null default now(),
  updated_at      timestamptz not null default now(),
  edited_at       timestamptz,
  foreign key (organization_id, task_number) references tasks (organization_id, number) on delete cascade
);
-- The list's order: a task's comments oldest first, ties by id (keyset pages on created_at, id).
create index comments_list_idx on comments (organization_id, task_number, created_at, id);

-- Who made each event's change: the user of the credential, or null for the service's own work (a
-- recurrence, a removal job). The message carries it beside organization_id, for consumers that
-- must not tell a user of their own change; never part of the bodies. A nullable column without a
-- default is added without rewriting a row; events written before it have none.
alter table events add column actor_id text;

create or replace function outbox_to_events() returns trigger language plpgsql set search_path from current as $$
begin
  insert into events (id, organization_id, type, created_at, payload, bytes, actor_id)
  select event_id, organization_id, type, (payload->>'created_at')::timestamptz, payload, octet_length(payload::text), payload->>'actor_id'
  from inserted
  on conflict (id) do nothing;
  return null;
end $$;
