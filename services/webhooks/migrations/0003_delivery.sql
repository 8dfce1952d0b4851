-- Up Migration
-- Delivery (issue 11; decision 0015): leases for attempts in flight, replays, the attempts log,
-- and the endpoint's failure streak for auto-disable.

-- An attempt in flight (DELIVERING) is leased: past lease_until without an outcome (a worker
-- killed mid-call, a job the stream lost), the dispatcher counts the attempt and dispatches again.
alter table deliveries add column lease_until timestamptz;
-- A replay's row names the row it replays (spec 3.3: a NEW row, the original unchanged); null
-- for the fan-out's row of an event.
alter table deliveries add column replay_of text;

-- The fan-out makes one row per (endpoint, event); replays add more, so the key covers the
-- fan-out's rows only.
alter table deliveries drop constraint deliveries_endpoint_event_key;
create unique index deliveries_fanout_key on deliveries (endpoint_id, event_id) where replay_of is null;
-- At most one live delivery per (endpoint, event): what makes a replay's 409
-- delivery_already_pending race-free (two concurrent replays: one insert wins, one violates this).
create unique index deliveries_live_key on deliveries (endpoint_id, event_id) where state in ('PENDING', 'DELIVERING');

-- The dispatcher's work: due PENDING rows, per endpoint; attempts in flight, per endpoint (the
-- per-endpoint concurrency bound) and by lease (expiry).
drop index deliveries_due_idx;
create index deliveries_due_idx on deliveries (next_attempt_at) where state = 'PENDING';
create index deliveries_endpoint_due_idx on deliveries (endpoint_id, next_attempt_at, id) where state = 'PENDING';
create index deliveries_in_flight_idx on deliveries (endpoint_id) where state = 'DELIVERING';
create index deliveries_lease_idx on deliveries (lease_until) where state = 'DELIVERING';

-- Each attempt of a delivery (DESIGN.md 4): when, the status or the error class, how long. Never
-- a body. `no_outcome` marks an attempt whose lease ran out unreported; a late report replaces it.
create table attempts (
  delivery_id  text not null references deliveries (id) on delete cascade,
  attempt      integer not null,
  attempted_at timestamptz not null,
  outcome      text not null,
  status       integer,
  error_class  text,
  duration_ms  integer,
  primary key (delivery_id, attempt)
);

-- Auto-disable (DESIGN.md 5): failure_count counts consecutive failed attempts; failing_since is
-- when the streak began (null after a success), so "no success for WEBHOOK_DISABLE_MIN_AGE" is
-- `failing_since <= now() - min_age`.
alter table endpoints add column failing_since timestamptz;
