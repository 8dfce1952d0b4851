-- Up Migration
-- Outbox rows that can never be published (DESIGN.md section 20), as in the tasks service: a
-- message over the NATS connection's max_payload, or refused by the client or the stream for its
-- size. Endpoints' operational events are small, but the relay is the same one: it moves such a
-- row here in the transaction that deletes it from the outbox, so the events behind it go on. The
-- columns are the ones every service's relay writes (libs/db outbox.ts).
create table outbox_dead_letters (
  event_id         text primary key,
  outbox_seq       bigint not null,
  subject          text not null,
  payload          jsonb not null,
  bytes            integer not null,
  reason           text not null,
  detail           text not null,
  written_at       timestamptz,
  dead_lettered_at timestamptz not null default now()
);
