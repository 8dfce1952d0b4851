-- Up Migration
-- A task's version: 1 at creation, one more for every change of what the task shows (a new
-- content version, archiving, unarchiving); the ETag of a task is its version. Nullable, so that
-- adding it rewrites no row: a task without one is at version_count (archiving did not count
-- before), and a content version without one is at its seq.
alter table tasks add column version integer;
alter table task_versions add column version integer;
