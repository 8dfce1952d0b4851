-- Up Migration
-- A task's erasure takes the Idempotency-Key records of its writes with it. They were found by the
-- result's id and creation time only, which another organization's task of the same number,
-- created in the same millisecond, could share: its record would have gone too, and a retry of
-- that create made a second task. Records now name their organization. Rows written before this
-- (null) expire within 24 hours and are matched as before until then. The index on
-- (organization_id, result id) is built concurrently after the migrations (repo/indexes.ts).
alter table idempotency add column organization_id text;
drop index if exists idempotency_result_id_idx;
