-- Up Migration
-- Exports: one row per export, the whole state of its job. The message on the work queue only says
-- which row to look at, so a message that comes again (a worker killed, a sweep re-publishing)
-- finds what is left to do here: nothing once it succeeded or failed, a takeover once the lease
-- of the run that holds it has passed.
create table exports (
  id              text primary key,
  organization_id text not null,
  requested_by    text not null,
  format          text not null check (format in ('jsonl', 'csv')),
  include         text[] not null,
  status          text not null default 'queued' check (status in ('queued', 'running', 'succeeded', 'failed')),
  done            bigint not null default 0,
  total           bigint not null default 0,
  -- Runs started; the run that set it is the only one whose writes to the row count (a fencing token).
  attempts        integer not null default 0,
  -- A running export whose lease has passed is taken over by the next delivery of its message.
  lease_until     timestamptz,
  file_key        text,
  file_size       bigint,
  error_code      text,
  error_detail    text,
  created_at      timestamptz not null default now(),
  -- When its message was last published: a sweep publishes it again while it waits for long.
  published_at    timestamptz not null default now(),
  completed_at    timestamptz,
  expires_at      timestamptz
);
-- The list's order, newest first.
create index exports_list_idx on exports (organization_id, created_at desc, id desc);
-- How many an organization has waiting or running (bounded), and what the sweep re-publishes.
create index exports_active_idx on exports (organization_id, created_at) where status in ('queued', 'running');
-- Files past their expiry.
create index exports_expiry_idx on exports (expires_at) where file_key is not null;
