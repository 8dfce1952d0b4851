-- Up Migration
-- Imports (decision 0042): a file uploaded as for attachments, read by a job line by line.

-- An import file's upload ticket is an attachment's, without a task: the same claim, PUT and expiry
-- (an unused ticket's object goes with it). It is not part of the storage allowance, so the
-- reservation sum counts attachment tickets only. An import holds its ticket (state `registered`,
-- so no other import takes the file and the expiry sweep leaves it) until it has finished; then the
-- ticket and the object go, or, after a dry run, the ticket is open again for one ticket lifetime,
-- so that the same file can be imported for real.
alter table uploads alter column task_number drop not null;
alter table uploads add column purpose text not null default 'attachment';
alter table uploads add constraint uploads_purpose_check
  check (purpose in ('attachment', 'import') and (purpose = 'attachment') = (task_number is not null));

-- One import. `lines_done` is the record of the lines dealt with: every line up to it has its work
-- (tasks, links, counts, errors) committed in the transaction that moved it, under this row's lock,
-- so a worker that starts again (after a crash) goes on after it and creates nothing twice.
-- `errors` keeps the first 100 line errors, in the file's order.
create table imports (
  id              text primary key,
  organization_id text not null,
  user_id         text not null,
  file_key        text not null,
  format          text not null check (format in ('jsonl', 'csv')),
  dry_run         boolean not null,
  status          text not null default 'queued' check (status in ('queued', 'running', 'succeeded', 'failed')),
  bytes_total     bigint not null,
  bytes_done      bigint not null default 0,
  lines_done      bigint not null default 0,
  created_count   bigint not null default 0,
  failed_count    bigint not null default 0,
  errors          jsonb not null default '[]'::jsonb,
  -- Its bookkeeping rows and its file are gone (after it finished).
  cleaned         boolean not null default false,
  created_at      timestamptz not null default now(),
  updated_at      timestamptz not null default now(),
  completed_at    timestamptz
);
create index imports_list_idx on imports (organization_id, created_at desc, id desc);
-- The per-organization bound, and the sweep that queues a lost job again.
create index imports_unfinished_idx on imports (organization_id, updated_at) where status in ('queued', 'running');
create index imports_uncleaned_idx on imports (completed_at) where status in ('succeeded', 'failed') and not cleaned;

-- What the file's ids became, kept in the database (not in a worker's memory) so that a file of
-- any size, read again after a crash, maps each reference the same way. A null target: a dry run's
-- object that would be created, or a person who is not a member here.
create table import_tasks (
  import_id   text not null,
  source_id   text not null,
  task_number bigint,
  primary key (import_id, source_id)
);
-- kind user: name holds the email; field: name the key, field_type its type; option: name its field's key.
create table import_refs (
  import_id  text not null,
  kind       text not null check (kind in ('user', 'field', 'option', 'label', 'project')),
  source_id  text not null,
  target_id  text,
  name       text,
  field_type text,
  primary key (import_id, kind, source_id)
);
create index import_refs_name_idx on import_refs (import_id, kind, name);
