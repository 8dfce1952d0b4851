-- Up Migration
-- The trace of the task change a delivery announces (W3C traceparent), written by the fan-out
-- from the event's trace context, so each attempt's call continues that trace (decision 0017).
-- Rows written in a traced transaction (replays) get that transaction's context by default.
alter table deliveries add column traceparent text default nullif(current_setting('tasksvc.traceparent', true), '');
