-- Up Migration
-- Schema `tasks` (issue 4; decision 0008). Tasks are addressed by (organization_id, number): the
-- public id T-<number> is numbered per organization, with no gaps (the counter row is updated
-- in the creating transaction, so a rollback gives the number back).

create table org_counters (
  organization_id text primary key,
  last_number     bigint not null
);

create table projects (
  id              text primary key,
  organization_id text not null,
  name            text not null,
  description     text,
  created_at      timestamptz not null default now(),
  updated_at      timestamptz not null default now(),
  constraint projects_name_key unique (organization_id, name)
);
create index projects_list_idx on projects (organization_id, created_at desc, id desc);

-- The task row carries the CURRENT version's content, so reads and lists touch one table.
create table tasks (
  organization_id    text not null,
  number             bigint not null,
  owner_user_id      text not null,
  parent_number      bigint,
  archived           boolean not null default false,
  current_version_id text not null,
  version_count      integer not null,
  title              text not null,
  description        text,
  status             text not null,
  priority           text,
  start_date         timestamptz,
  due_date           date,
  notes              text,
  story_points       numeric,
  recurrence         jsonb,
  project_ids        text[] not null default '{}',
  created_at         timestamptz not null,
  updated_at         timestamptz not null,
  primary key (organization_id, number),
  foreign key (organization_id, parent_number) references tasks (organization_id, number)
);
-- GET /v1/tasks: newest update first within (org, archived); filters ride on the same order.
create index tasks_list_idx on tasks (organization_id, archived, updated_at desc, number desc);
create index tasks_status_idx on tasks (organization_id, archived, status, updated_at desc, number desc);
create index tasks_parent_idx on tasks (organization_id, parent_number, archived, updated_at desc, number desc) where parent_number is not null;

-- Immutable snapshots. seq counts a task's versions from 1 (history order, keyset).
create table task_versions (
  id              text primary key,
  organization_id text not null,
  task_number     bigint not null,
  seq             integer not null,
  title           text not null,
  description     text,
  status          text not null,
  priority        text,
  start_date      timestamptz,
  due_date        date,
  notes           text,
  story_points    numeric,
  recurrence      jsonb,
  project_ids     text[] not null,
  created_at      timestamptz not null,
  unique (organization_id, task_number, seq),
  foreign key (organization_id, task_number) references tasks (organization_id, number)
);

-- The current version's project links (a task may belong to several projects).
create table task_projects (
  organization_id text not null,
  task_number     bigint not null,
  project_id      text not null references projects (id) on delete cascade,
  primary key (organization_id, task_number, project_id),
  foreign key (organization_id, task_number) references tasks (organization_id, number)
);
create index task_projects_project_idx on task_projects (project_id);

-- blocked_number is blocked by blocker_number. Acyclic: inserts check reachability under a
-- per-organization advisory lock.
create table dependencies (
  organization_id text not null,
  blocked_number  bigint not null,
  blocker_number  bigint not null,
  created_at      timestamptz not null default now(),
  primary key (organization_id, blocked_number, blocker_number),
  foreign key (organization_id, blocked_number) references tasks (organization_id, number),
  foreign key (organization_id, blocker_number) references tasks (organization_id, number),
  check (blocked_number <> blocker_number)
);
create index dependencies_blocker_idx on dependencies (organization_id, blocker_number);

-- Transactional outbox: written with the change, relayed to JetStream, then deleted.
create table outbox (
  seq             bigserial primary key,
  event_id        text not null unique,
  type            text not null,
  organization_id text not null,
  payload         jsonb not null,
  created_at      timestamptz not null default now()
);

-- Service-level idempotency (DESIGN.md section 1): a write records the request's key in its own
-- transaction, so a retry the gateway could not answer gets the original result, never a twin.
create table idempotency (
  credential_id text not null,
  key           text not null,
  operation     text not null,
  result        jsonb not null,
  created_at    timestamptz not null default now(),
  primary key (credential_id, key)
);
create index idempotency_created_idx on idempotency (created_at);
