-- Up Migration
-- Outbox rows that can never be published (DESIGN.md section 20): a message over the NATS
-- connection's max_payload, or refused by the client or the stream for its size. The relay moves
-- such a row here in the transaction that deletes it from the outbox, so the events behind it go
-- on. The payload is kept as the outbox held it, for an operator to read or publish by hand; the
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
