-- Up Migration
-- Service-level idempotency (DESIGN.md section 1), as in the tasks and boards services. POST
-- /v1/api-keys was idempotent only through the gateway's record, which is written after the key
-- is minted: a gateway killed in between left a claim that expired and a retry that minted a
-- second key (issue 9, found by test/fault/crash.test.ts). The key is now recorded with its result
-- in the minting transaction. The result holds the new secret for the replay window (24 h), as
-- the gateway's record of the same response already does.
create table idempotency (
  credential_id text not null,
  key           text not null,
  operation     text not null,
  result        jsonb not null,
  created_at    timestamptz not null default now(),
  primary key (credential_id, key)
);
create index idempotency_created_idx on idempotency (created_at);
