-- Up Migration
-- Each event's webhook body, stored once as the exact text that is signed and sent: every
-- delivery of the event (its retries, its replays, one per endpoint) points at it by event id,
-- as Svix keeps a message's content apart from its attempts. Written by the fan-out in the
-- statement that makes the event's deliveries, only for an event that has any.
create table event_bodies (
  event_id        text primary key,
  organization_id text not null,
  -- The event's own time (the envelope's created_at): what startAttempts answers as occurred_at.
  occurred_at     timestamptz not null,
  body            text not null
);
-- The sweep's old bodies (they go in in about time order, so a block range summary finds them).
create index event_bodies_occurred_brin on event_bodies using brin (occurred_at);
-- The sweep keeps a body while any delivery of its event is left (a replay may be made of any).
create index deliveries_event_idx on deliveries (event_id);
-- Deliveries made from now on carry no payload of their own. One made before keeps its payload,
-- which is rendered by the same builder whenever its event has no stored body.
alter table deliveries alter column payload drop not null;
