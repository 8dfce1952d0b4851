-- Up Migration
-- The trash. A deleted task keeps its row and everything hanging off it, marked: `deleted_at` set
-- means every read answers as if it did not exist, until a restore clears it or the purge erases
-- it at `purge_at`. `trash_root` is the task whose deletion took this one (itself for the task the
-- DELETE named), so a restore brings back exactly the subtasks that went with it. Nullable columns
-- without a default are added without rewriting a row.
alter table tasks add column deleted_at timestamptz, add column deleted_by text, add column purge_at timestamptz,
  add column trash_root bigint;
alter table tasks add constraint tasks_trash_check check ((deleted_at is null) = (purge_at is null) and (deleted_at is null) = (trash_root is null));

-- GET /v1/trash: an organization's trash, newest deletion first (keyset on deleted_at, number).
create index tasks_trash_idx on tasks (organization_id, deleted_at desc, number desc) where deleted_at is not null;
-- The purge scheduler: the tasks whose time has come, oldest first, never a scan of the tasks.
create index tasks_purge_idx on tasks (purge_at) where deleted_at is not null;

-- An occurrence erased from a series that goes on keeps its slot recorded, so the scheduler never
-- makes that day's occurrence again: the slot no longer names a task.
alter table recurrence_slots alter column task_number drop not null;

-- Erasing a task takes the Idempotency-Key records whose result is the task (or one of its comments
-- or attachments) with it. The table holds a day of keys, so the index is built here.
create index idempotency_result_id_idx on idempotency ((result->>'id'));
