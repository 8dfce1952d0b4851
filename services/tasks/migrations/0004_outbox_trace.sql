-- Up Migration
-- The trace of the transaction that wrote an outbox row (W3C traceparent), so the relay's publish
-- and every consumer continue that trace (decision 0017). libs/db sets the transaction-local
-- setting when tracing is on; otherwise the default is null and nothing changes.
alter table outbox add column traceparent text default nullif(current_setting('tasksvc.traceparent', true), '');
