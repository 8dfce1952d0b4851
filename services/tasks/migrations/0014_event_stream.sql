-- Up Migration
-- The live event stream's order is the task-event stream's (JetStream's sequence), which can
-- differ from the feed's (the time each change's transaction started). The relay records each
-- event's sequence here once the stream has stored it, in the transaction that removes the event
-- from the outbox: a resumed stream reads "every event after this one" from here. Insert-only,
-- beside the feed, so that events rows are never updated.
create table event_stream (
  organization_id text not null,
  stream_seq      bigint not null,
  event_id        text not null,
  type            text not null,
  primary key (organization_id, stream_seq)
);
-- A client's Last-Event-ID: where it resumes.
create unique index event_stream_event_idx on event_stream (event_id);

-- One row: every event published up to last_seq has its sequence recorded (the relay publishes a
-- batch only after the previous one committed). Events published before `since` have none and
-- come first, in the feed's order.
create table event_stream_position (
  one      boolean primary key default true check (one),
  last_seq bigint not null default 0,
  since    timestamptz not null default now()
);
insert into event_stream_position default values;
