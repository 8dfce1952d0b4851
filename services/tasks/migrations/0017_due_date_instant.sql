-- Up Migration
-- A due date is an instant, kept as the client gave it (to the millisecond), as start_date always
-- was: a day stored as `date` could not keep the time of a date-time, so what a client read back
-- was not what it wrote. Each existing day becomes 00:00 UTC of that day, which is what the API
-- showed for it and what a day given as a due date means.
--
-- Changing the type rewrites both tables once, under the ACCESS EXCLUSIVE lock of the ALTER, and
-- a rewrite rebuilds every index of the table. The indexes the service builds itself after its
-- migrations (repo/indexes.ts, CREATE INDEX CONCURRENTLY) are dropped first: the two of the due
-- date's sorts must be built again anyway (their expression's sentinel is a timestamptz now), and
-- rebuilding the others, the full-text GIN index above all, inside the lock took ten times as long
-- as the rewrite itself (a million tasks: 63 s against 6 s). They are built again, without
-- blocking writers, as soon as this migration is done; until then lists and searches work, more
-- slowly. The names are those of the service's index list.
drop index if exists tasks_created_idx, tasks_due_asc_idx, tasks_due_desc_idx, tasks_priority_asc_idx, tasks_priority_desc_idx,
  tasks_points_asc_idx, tasks_points_desc_idx, tasks_text_idx, tasks_projects_idx, tasks_title_trgm_idx;

-- Postgres refuses to change the type of a column a trigger's condition names: the two wake-up
-- triggers of migration 0008 are dropped and made again, as they were.
drop trigger tasks_wake_head on tasks;
drop trigger tasks_wake_series on tasks;

-- `at time zone 'UTC'`: a date cast to timestamptz would take the session's zone.
alter table tasks alter column due_date type timestamptz using due_date::timestamp at time zone 'UTC';
alter table task_versions alter column due_date type timestamptz using due_date::timestamp at time zone 'UTC';

create trigger tasks_wake_head before update on tasks for each row
  when (new.recurrence is not null and (new.recurrence is distinct from old.recurrence or new.status <> old.status
    or new.due_date is distinct from old.due_date or new.archived <> old.archived))
  execute function tasks_wake_head();
create trigger tasks_wake_series after update on tasks for each row
  when (new.series_head is not null and (new.status <> old.status or new.due_date is distinct from old.due_date
    or new.archived <> old.archived))
  execute function tasks_wake_series();

-- The rewrite dropped the column's statistics: the planner estimates due date bounds from them.
analyze tasks (due_date);
