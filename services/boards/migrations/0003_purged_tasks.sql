-- Up Migration
-- A task erased by the tasks service takes its board entries and rollover records with it (the
-- boards service hears of it by task.purged): found by organization and task number.
create index entries_task_idx on entries (organization_id, task_number);
