-- Up Migration
-- Attachments (issue 12; decision 0016, "Designed, next"). The bytes live in the blob store
-- (libs/blobs) under `att/<organization_id>/<upl_…>`; these tables say which keys are whose.

-- An upload ticket. The rows of unexpired tickets that are not yet registered are the
-- organization's storage reservation: upload-start counts them under the storage row's lock.
-- state: open (no PUT yet, or the last one failed and was released), receiving (a PUT through the
-- gateway claimed it), received (the gateway reported the bytes stored), registered (an
-- attachment owns the key; its bytes count in storage.used_bytes, not as a reservation).
create table uploads (
  file_key        text primary key,
  organization_id text not null,
  task_number     bigint not null,
  file_name       text not null,
  content_type    text not null,
  size            bigint not null check (size > 0),
  state           text not null default 'open' check (state in ('open', 'receiving', 'received', 'registered')),
  expires_at      timestamptz not null,
  created_at      timestamptz not null default now(),
  foreign key (organization_id, task_number) references tasks (organization_id, number)
);
-- The reservation sum of upload-start, and the sweep of expired tickets.
create index uploads_reserved_idx on uploads (organization_id, expires_at) where state <> 'registered';
create index uploads_expired_idx on uploads (expires_at) where state <> 'registered';

-- An attachment is added on the task's version current at registration (version_seq) and stays
-- visible on every later version until deleted (decision 0016, "Versions").
create table attachments (
  id              text primary key,
  organization_id text not null,
  task_number     bigint not null,
  version_seq     integer not null,
  file_key        text not null,
  file_name       text not null,
  content_type    text not null,
  size            bigint not null check (size > 0),
  created_at      timestamptz not null default now(),
  constraint attachments_file_key_key unique (file_key),
  foreign key (organization_id, task_number) references tasks (organization_id, number)
);
create index attachments_list_idx on attachments (organization_id, task_number, created_at desc, id desc);

-- Bytes of registered attachments per organization, changed in the transaction that registers or
-- deletes one. The row is also the organization's storage lock: upload-start takes it `for update`
-- (inserting it on first use), so two starts cannot both take the last bytes.
create table storage (
  organization_id text primary key,
  used_bytes      bigint not null default 0 check (used_bytes >= 0)
);

-- Process-wide secrets shared by every replica (the capability MAC key), made on first start.
create table secrets (
  name       text primary key,
  value      text not null,
  created_at timestamptz not null default now()
);
