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

-- The audit log itself: one chain per organization. `body` is the event exactly as served (its
-- JSON text, `hash` included), so what a client reads is what was hashed; the other columns are
-- copies for the filters and the pages.
create table audit_events (
  organization_id text not null,
  sequence        bigint not null,
  id              text not null,
  action          text not null,
  actor_id        text not null,
  target_id       text not null,
  created_at      timestamptz not null,
  stored_at       timestamptz not null default now(),
  body            text not null,
  primary key (organization_id, sequence),
  constraint audit_events_id_key unique (id)
);
create index audit_events_action_idx on audit_events (organization_id, action, sequence);
create index audit_events_actor_idx on audit_events (organization_id, actor_id, sequence);
create index audit_events_target_idx on audit_events (organization_id, target_id, sequence);
create index audit_events_created_at_idx on audit_events (organization_id, created_at);
-- For the retention sweep.
create index audit_events_created_idx on audit_events (created_at);

-- Each organization's last sequence and hash, locked by the consumer that appends: the lock is what
-- keeps the chain gapless and linear when several replicas consume at once. It outlives the sweep,
-- so numbering goes on after old events are deleted.
create table audit_heads (
  organization_id text primary key,
  sequence        bigint not null,
  hash            text not null
);
