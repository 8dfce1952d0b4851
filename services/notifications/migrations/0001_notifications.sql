-- Up Migration
-- Schema `notifications`: each user's inbox, written from the task events stream. Tasks, comments
-- and users are referenced by id and never read from their owners' schemas.

create table notifications (
  id              text primary key,
  organization_id text not null,
  user_id         text not null,
  type            text not null check (type in ('assigned', 'mentioned', 'commented', 'due_soon', 'overdue')),
  task_id         text not null,
  comment_id      text,
  actor_id        text,
  event_id        text not null,
  -- The event's time, so a redelivery writes the same row and retention counts from the event.
  created_at      timestamptz not null,
  read_at         timestamptz,
  -- One per user per event and type: a redelivered or replayed event adds nothing (on conflict do nothing).
  constraint notifications_event_key unique (event_id, user_id, type)
);
-- The inbox, newest first; its keyset is (created_at, id).
create index notifications_inbox_idx on notifications (organization_id, user_id, created_at desc, id desc);
-- The unread filter and read-all walk only unread rows.
create index notifications_unread_idx on notifications (organization_id, user_id, created_at desc, id desc) where read_at is null;
-- Retention sweeps by age.
create index notifications_created_idx on notifications (created_at);

-- Unread notifications per user and organization, kept by the statements that insert, read and
-- sweep notifications, so the unread count is one row read however many are unread.
create table unread_counts (
  organization_id text not null,
  user_id         text not null,
  unread          bigint not null check (unread >= 0),
  primary key (organization_id, user_id)
);

-- Who was told of a mention in a comment, so an edit that mentions them again tells nobody twice.
create table comment_mentions (
  organization_id text not null,
  comment_id      text not null,
  user_id         text not null,
  created_at      timestamptz not null default now(),
  primary key (organization_id, comment_id, user_id)
);
create index comment_mentions_created_idx on comment_mentions (created_at);
