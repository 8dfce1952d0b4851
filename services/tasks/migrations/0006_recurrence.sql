-- Up Migration
-- Recurring tasks (issue 16, decision 0021): the task that carries a recurrence heads its series
-- and is its first occurrence; each later occurrence is a new task, made for one slot (a local
-- day) of the rule. The key (series, slot) makes every slot's occurrence exactly once, whoever
-- makes it: a retried tick, a scheduler that crashed mid-way, two replicas at once.
create table recurrence_slots (
  organization_id text not null,
  head_number     bigint not null,
  slot            date not null,
  task_number     bigint not null,
  created_at      timestamptz not null default now(),
  primary key (organization_id, head_number, slot),
  foreign key (organization_id, head_number) references tasks (organization_id, number),
  foreign key (organization_id, task_number) references tasks (organization_id, number)
);

-- The scheduler's scan: only tasks with a recurrence.
create index tasks_recurring_idx on tasks (organization_id, number) where recurrence is not null;
