-- Up Migration
-- When a task was archived (null while it is not). The recurrence scheduler needs it (decision
-- 0021): the latest occurrence of a COMPLETION series archived instead of completed ends like a
-- completion, and the next is due one interval after the day it was archived. Tasks archived
-- before this migration take their last change as that time (the closest the rows know).
alter table tasks add column archived_at timestamptz;
update tasks set archived_at = updated_at where archived;
