-- Up Migration
-- An Idempotency-Key record is inserted (the claim) and then updated once (the outcome). With free
-- space left on each page the update can be HOT (heap-only): no new entries in the primary key
-- and the created_at index. Measured on POST /v1/tasks with an Idempotency-Key: p99 51-57 ms →
-- 47-49 ms at the same throughput (decision 0008).
alter table idempotency_keys set (fillfactor = 70);
