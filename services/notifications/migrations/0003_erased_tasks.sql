-- Up Migration
-- Tasks the tasks service erased (task.purged), kept longer than the task event stream keeps an
-- event (7 days): an event of the task that comes after its erasure (delivered again, or taken
-- by another consumer in the same moment) must not make a notification of it again.
create table erased_tasks (
  organization_id text not null,
  task_id         text not null,
  erased_at       timestamptz not null default now(),
  primary key (organization_id, task_id)
);
create index erased_tasks_at_idx on erased_tasks (erased_at);
