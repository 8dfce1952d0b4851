-- Up Migration
-- Operational events of endpoints (webhook_endpoint.disabled and .enabled, decision 0028): written
-- in the transaction that disables or enables the endpoint, relayed to this service's event
-- stream, from which the tasks service takes them into the events outbox. The same shape as the
-- tasks service's outbox (libs/db outbox.ts), so the same relay publishes it.
create table outbox (
  seq             bigserial primary key,
  event_id        text not null unique,
  type            text not null,
  organization_id text not null,
  payload         jsonb not null,
  created_at      timestamptz not null default now(),
  traceparent     text default nullif(current_setting('tasksvc.traceparent', true), '')
);
