-- Up Migration
-- An occurrence's link to its series (issue 16, decision 0021): the head it was made from and the
-- slot it was made for, shown as `series_task_id` and `occurrence_date`. Written with the task by
-- the scheduler's transaction, which also records the slot in recurrence_slots; never changed.
-- Adding nullable columns rewrites nothing; the backfill touches only tasks made by the scheduler.
alter table tasks add column series_head bigint, add column series_slot date;
alter table tasks add constraint tasks_series_check check ((series_head is null) = (series_slot is null));
update tasks t set series_head = rs.head_number, series_slot = rs.slot
  from recurrence_slots rs
  where rs.organization_id = t.organization_id and rs.task_number = t.number;
-- GET /v1/tasks?series_task_id=…: the occurrences of one series.
create index tasks_series_idx on tasks (organization_id, series_head) where series_head is not null;
