-- Up Migration
-- A task erased by the tasks service takes its notifications with it (task.purged):
-- found by organization and task id, not by a walk of every inbox of the organization.
create index notifications_task_idx on notifications (organization_id, task_id);
