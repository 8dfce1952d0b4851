-- Up Migration
-- GET /v1/events?task_id=T-n: one task's events, newest first (keyset pages on created_at, id),
-- for a consumer reconciling one task, or showing what happened to it.
create index events_task_idx on events (organization_id, (payload->'data'->>'id'), created_at desc, id desc);
