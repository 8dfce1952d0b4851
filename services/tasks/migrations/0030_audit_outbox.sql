-- Up Migration
-- Audit events (the audit log): written in the transaction of the change they record, relayed by
-- this service's own outbox relay to the audit stream, where the keys service's chain consumer
-- numbers and hashes them. The same shape as the other outboxes (libs/db outbox.ts).
create table audit_outbox (
  seq             bigserial primary key,
  event_id        text not null unique,
  organization_id text not null,
  payload         jsonb not null,
  created_at      timestamptz not null default now(),
  traceparent     text default nullif(current_setting('tasksvc.traceparent', true), '')
);
-- What can never be published (over the connection's max_payload, refused for its size): set aside
-- so the events behind it go on; the columns are the ones every relay writes.
create table audit_outbox_dead_letters (
  event_id         text primary key,
  outbox_seq       bigint not null,
  subject          text not null,
  payload          jsonb not null,
  bytes            integer not null,
  reason           text not null,
  detail           text not null,
  written_at       timestamptz,
  dead_lettered_at timestamptz not null default now()
);
