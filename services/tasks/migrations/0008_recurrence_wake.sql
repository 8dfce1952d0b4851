-- Up Migration
-- The scheduler's wake-up time per series (decision 0021): a tick reads only the recurring tasks
-- whose `recurrence_wake` has come, not every one. After looking at a series with nothing left
-- to do that day, the scheduler moves it to the start of the next day in the series' zone (a
-- new slot, a rollover or a completion's next day can only come at a day's start).
--
-- What a user changes that matters to the series wakes it at once (-infinity):
-- - the head's recurrence, status, due date or archiving (a BEFORE trigger on the head's row);
-- - an occurrence's status, due date or archiving (an AFTER trigger updates its head).
-- The scheduler's own update is a compare-and-set on the row's xmin: a head row changed since the
-- scheduler read it (by a user, a trigger, or anything else) keeps its wake and is read again.
-- A new task starts at -infinity: looked at on the next tick.
alter table tasks add column recurrence_wake timestamptz not null default '-infinity';
drop index tasks_recurring_idx;
create index tasks_recurrence_wake_idx on tasks (recurrence_wake) where recurrence is not null and not archived;

create function tasks_wake_head() returns trigger language plpgsql as $$
begin
  new.recurrence_wake := '-infinity';
  return new;
end $$;
create trigger tasks_wake_head before update on tasks for each row
  when (new.recurrence is not null and (new.recurrence is distinct from old.recurrence or new.status <> old.status
    or new.due_date is distinct from old.due_date or new.archived <> old.archived))
  execute function tasks_wake_head();

create function tasks_wake_series() returns trigger language plpgsql set search_path from current as $$
begin
  update tasks set recurrence_wake = '-infinity'
  where organization_id = new.organization_id and number = new.series_head;
  return null;
end $$;
create trigger tasks_wake_series after update on tasks for each row
  when (new.series_head is not null and (new.status <> old.status or new.due_date is distinct from old.due_date
    or new.archived <> old.archived))
  execute function tasks_wake_series();
