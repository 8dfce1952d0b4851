-- Up Migration
-- Due-date events (decision 0038): task.due_soon when a task's due date comes within the window,
-- task.overdue when it passes, once per due date value. Each column holds the due date value its
-- event was sent for; an event is owed while it differs from the task's due date, so moving the due
-- date arms both again by itself, and clearing it (null) takes the task out of both indexes.
-- Sending task.overdue sets both: a date already past when first checked gets no task.due_soon.
alter table tasks add column due_soon_sent timestamptz, add column due_overdue_sent timestamptz;

-- What a tick reads: the open tasks whose event is owed, in due date order, so "due before now
-- (plus the window)" is one range of a small index, never a scan of the tasks. Postgres keeps
-- them on every write of the due date, status or archiving, whoever writes. The scheduler's
-- statements repeat these predicates word for word, so the planner matches them.
create index tasks_due_soon_idx on tasks (due_date)
  where due_date is not null and status <> 'COMPLETED' and not archived and due_soon_sent is distinct from due_date;
create index tasks_due_overdue_idx on tasks (due_date)
  where due_date is not null and status <> 'COMPLETED' and not archived and due_overdue_sent is distinct from due_date;

-- Tasks already overdue before this version count as announced: the first tick would otherwise
-- send a task.overdue for every open task ever left past its date. Those due within the window
-- get their task.due_soon as usual.
update tasks set due_soon_sent = due_date, due_overdue_sent = due_date
where due_date is not null and due_date <= now() and status <> 'COMPLETED' and not archived;
