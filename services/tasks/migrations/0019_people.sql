-- Up Migration
-- People on tasks: assignees are content (a version, history, events); followers are not.
-- An array column with a constant default is added without rewriting a row.
alter table tasks add column assignee_ids text[] not null default '{}';
alter table task_versions add column assignee_ids text[] not null default '{}';

-- A row per user who follows or once followed a task: unfollowed_at set means they left it, and an
-- automatic follow (owner, assignee, commenter, mentioned) never brings them back; following again by
-- hand does.
create table task_followers (
  organization_id text not null,
  task_number     bigint not null,
  user_id         text not null,
  reason          text not null check (reason in ('owner', 'assignee', 'commenter', 'mentioned', 'manual')),
  created_at      timestamptz not null default now(),
  unfollowed_at   timestamptz,
  primary key (organization_id, task_number, user_id),
  foreign key (organization_id, task_number) references tasks (organization_id, number)
);
create index task_followers_list_idx on task_followers (organization_id, task_number, created_at, user_id) where unfollowed_at is null;

-- Every owner follows the tasks they made. Measured at a million tasks: 12.5 s, during which the
-- tasks table stays locked by the column added above (the migrations share one transaction): an
-- upgrade of a large organization replaces its tasks replicas together (docs/operations.md).
insert into task_followers (organization_id, task_number, user_id, reason, created_at)
select organization_id, number, owner_user_id, 'owner', created_at from tasks;
