-- Up Migration
-- Schema `webhooks` (issue 11): the organizations' webhook endpoints (spec 2.8, 3.4). Deliveries
-- and the consumer of task events come with the delivery work; this is the endpoint resource.

create table endpoints (
  id                        text primary key,
  organization_id           text not null,
  url                       text not null,
  -- Empty means every type (spec 6).
  event_types               text[] not null default '{}',
  enabled                   boolean not null default true,
  verified                  boolean not null default false,
  -- AES-256-GCM under WEBHOOK_SECRET_KEY (`v1.<iv>.<ciphertext‖tag>`, libs/webhooks secrets.ts);
  -- the plain secret is never stored here.
  secret_sealed             text not null,
  -- The one previous-secret slot of a rotation (spec 3.4), null outside a grace window.
  previous_secret_sealed    text,
  previous_secret_expires_at timestamptz,
  -- Consecutive failed attempts; enabling through the API resets it (spec 3.4).
  failure_count             integer not null default 0,
  disabled_reason           text,
  created_at                timestamptz not null default clock_timestamp(),
  updated_at                timestamptz not null default clock_timestamp()
);
-- Keyset pages, newest first (libs/db keyset helpers).
create index endpoints_page_idx on endpoints (organization_id, created_at desc, id desc);

-- Service-level idempotency (DESIGN.md section 1), as in the other services.
create table idempotency (
  credential_id text not null,
  key           text not null,
  operation     text not null,
  result        jsonb not null,
  created_at    timestamptz not null default now(),
  primary key (credential_id, key)
);
create index idempotency_created_idx on idempotency (created_at);
