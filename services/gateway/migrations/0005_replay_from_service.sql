-- Up Migration
-- An Idempotency-Key outcome whose body holds a secret shown once (a webhook endpoint's signing
-- secret) is not stored here: the record keeps the status and this flag, and a replay is
-- forwarded to the service, whose own record holds the result with the secret sealed
-- (decision 0015). response_body is '' for such a record, so it never reads as "in progress".
alter table idempotency_keys add column replay_from_service boolean not null default false;
