-- Up Migration
-- Schema `boards` (issue 5; decision 0009). A board is (organization, user, date); tasks are
-- referenced by number and read from the tasks service, never from its schema.

-- A section's fill status, once someone set it or placed an entry. No row = NOT_FILLED.
create table sections (
  organization_id text not null,
  user_id         text not null,
  date            date not null,
  section         text not null check (section in ('TODO', 'PROGRESS')),
  status          text not null check (status in ('COMPLETED', 'PLANNED', 'NOT_FILLED', 'FILLING')),
  updated_at      timestamptz not null default now(),
  primary key (organization_id, user_id, date, section)
);

-- A task sits on at most one section of a user's day; moving it re-creates the entry (new id).
create table entries (
  id              text primary key,
  organization_id text not null,
  user_id         text not null,
  date            date not null,
  section         text not null check (section in ('TODO', 'PROGRESS')),
  task_number     bigint not null,
  created_at      timestamptz not null default clock_timestamp(),
  constraint entries_task_key unique (organization_id, user_id, date, task_number)
);
create index entries_board_idx on entries (organization_id, user_id, date, created_at, id);

-- Service-level idempotency (DESIGN.md section 1), as in the tasks service.
create table idempotency (
  credential_id text not null,
  key           text not null,
  operation     text not null,
  result        jsonb not null,
  created_at    timestamptz not null default now(),
  primary key (credential_id, key)
);
create index idempotency_created_idx on idempotency (created_at);
