-- Up Migration
-- Deliveries (issue 11, fan-out; spec 2.9, 3.3): one row per (endpoint, event) made by the
-- consumer of the task-event stream, later worked by the delivery worker. Deleting an endpoint
-- removes its deliveries, queued and in flight alike (spec 3.4).

create table deliveries (
  id              text primary key,
  organization_id text not null,
  endpoint_id     text not null references endpoints (id) on delete cascade,
  event_id        text not null,
  event_type      text not null,
  -- The body to send, Standard Webhooks envelope (DESIGN.md 5): {type, timestamp, data}.
  payload         jsonb not null,
  -- PENDING, DELIVERING, SUCCEEDED, FAILED, DISABLED (spec 3.3).
  state           text not null default 'PENDING',
  attempt_count   integer not null default 0,
  next_attempt_at timestamptz default now(),
  -- HTTP status of the latest attempt; null before any attempt.
  last_status     integer,
  created_at      timestamptz not null default clock_timestamp(),
  updated_at      timestamptz not null default clock_timestamp(),
  -- The fan-out's idempotency: a redelivered event, or one handled by two replicas at once,
  -- finds its row there and adds none. Replays (spec 3.3) will need a new row for the same
  -- (endpoint, event): they will relax this key then, e.g. to a partial unique index on the
  -- fan-out's rows only.
  constraint deliveries_endpoint_event_key unique (endpoint_id, event_id)
);
-- The delivery log of one endpoint, newest first (keyset pages).
create index deliveries_page_idx on deliveries (endpoint_id, created_at desc, id desc);
-- The worker's due work.
create index deliveries_due_idx on deliveries (state, next_attempt_at);
