-- Up Migration
-- Rewinds (decision 0047): one row per undo or dry run, the whole state of its job. The match is
-- stored with `until` resolved at creation, so a run that comes again (a worker killed, a sweep
-- re-publishing) finds the same tasks; the undo's own versions come after `until` and never match.
create table rewinds (
  id              text primary key,
  organization_id text not null,
  requested_by    text not null,
  credential_id   text,
  request_id      text,
  batch_key       text,
  since           timestamptz not null,
  until           timestamptz not null,
  dry_run         boolean not null,
  status          text not null check (status in ('running', 'succeeded', 'failed')),
  error           text,
  -- Deliveries of its job so far: the next message id, so a re-published job is not taken for a duplicate.
  published       integer not null default 0,
  lease_until     timestamptz,
  created_at      timestamptz not null default now(),
  completed_at    timestamptz
);
create index rewinds_running_idx on rewinds (lease_until) where status = 'running';

-- One row per task a rewind planned or did, written in the transaction that did it: a run that comes
-- again goes on with the tasks that have none.
create table rewind_items (
  rewind_id    text not null references rewinds (id) on delete cascade,
  task_number  bigint not null,
  action       text not null check (action in ('revert', 'trash', 'skip')),
  item         jsonb not null,
  primary key (rewind_id, task_number)
);
