import type { Logger } from "@tasksvc/logger";
import {
  contextFromTraceparent,
  currentTraceparent,
  inSpan,
  outboxPublished,
  outboxRelayDelay,
  sampled,
  sharedFor,
  SpanKind,
  tracingEnabled,
} from "@tasksvc/telemetry";
import type { Database, Sql } from "./pool.js";

/**
 * The columns every outbox table has; a service adds its own (the event type, the tenant) and
 * names the row type that declares them, as its repositories do for their tables.
 *
 * ```sql
 * create table outbox (
 *   seq      bigserial primary key,   -- publication order
 *   event_id text not null unique,    -- Nats-Msg-Id
 *   payload  jsonb not null,          -- the message, published as JSON
 *   ...
 * );
 * ```
 */
export interface OutboxRow {
  /** int8 comes back from postgres.js as text. */
  seq: string;
  event_id: string;
  payload: unknown;
  /** When the row was written (its transaction's start): the relay's lag is measured from it. */
  created_at?: Date;
  /**
   * The trace of the transaction that wrote the row, if it was traced: the column's default,
   * `nullif(current_setting('tasksvc.traceparent', true), '')` (libs/db transactions.ts).
   */
  traceparent?: string | null;
}

/**
 * Where rows go. A JetStreamClient is one as it stands (`publisher: jetstream(nc)`): libs/db may
 * not import libs/nats (STYLE "What may import what"), so the relay names only the one method it
 * calls, and the service that holds both passes its JetStream client in.
 */
export interface OutboxPublisher {
  /**
   * Resolves once the stream stored the message (or dropped it as a duplicate of `msgID`).
   * `traceparent`, when given, goes in the message's headers (`outboxPublisher` of libs/nats).
   */
  publish(subject: string, data: Uint8Array, opts: { msgID: string; traceparent?: string }): Promise<Stored>;
}

/** Where the stream stored a message: its sequence (a duplicate's is the original's). */
export interface Stored {
  seq: number;
}

export interface OutboxRelayOptions<R extends OutboxRow> {
  db: Pick<Database, "tx" | "sql">;
  publisher: OutboxPublisher;
  /**
   * The outbox table, quoted by the driver; bare, it resolves through the connection's
   * search_path (the service's schema). A dot separates schema and table.
   */
  table: string;
  /**
   * The advisory lock that makes one relay at a time work this table; the same name in every
   * replica of a service and in every version of it (a rolling deploy runs old and new together).
   */
  lock: string;
  /** The subject a row is published on. */
  subject(row: R): string;
  log: Logger;
  /** How often to look for rows no local write announced (other replicas, a crashed relay). Default 500 ms. */
  pollMs?: number;
  /** Rows per transaction. Default 256. */
  batch?: number;
  /**
   * Runs in the batch's transaction once the stream stored every row, before they are deleted:
   * `seqs[i]` is where `rows[i]` landed. Batches are published one after the other, so what this
   * records always covers a prefix of the stream.
   */
  onPublished?: (t: Sql, rows: readonly R[], seqs: readonly number[]) => Promise<unknown>;
}

export interface OutboxRelay {
  /** A local transaction committed outbox rows: publish now rather than at the next poll. */
  notify(): void;
  /** Finishes the batch in progress (published rows are deleted) and stops; the rest stays for the next relay. */
  stop(): Promise<void>;
}

const encoder = new TextEncoder();

/**
 * Publishes outbox rows in `seq` order, then deletes them (DESIGN.md section 5).
 *
 * - One relay at a time per lock name: a transaction-scoped advisory lock, tried without waiting,
 *   so every replica runs a relay and one of them works (keeps the stream in outbox order).
 * - Rows are deleted only after the publisher acknowledged them, in the same transaction that read
 *   them: a crash between publish and delete leaves the rows, which are published again with the
 *   same Nats-Msg-Id (the row's event_id), and the stream drops the duplicate within its duplicate
 *   window. For the same reason the delete commits asynchronously: losing it re-sends, never loses.
 */
export function startOutboxRelay<R extends OutboxRow>(opts: OutboxRelayOptions<R>): OutboxRelay {
  const pollMs = opts.pollMs ?? 500;
  const batch = opts.batch ?? 256;
  let stopped = false;
  let wake: (() => void) | undefined;
  let pending = false;
  const label = { outbox: opts.table };
  const published = outboxPublished.labels(label);
  const delay = outboxRelayDelay.labels(label);
  // Scrape-time backlog: rows waiting (counted up to 100000, an index-only walk) and the oldest's age.
  const readBacklog = sharedFor(
    500,
    async () => opts.db.sql<Array<{ n: number; age: number }>>`
      select (select count(*)::int from (select 1 from ${opts.db.sql(opts.table)} limit 100000) c) as n,
             coalesce(extract(epoch from now() - (select created_at from ${opts.db.sql(opts.table)} order by seq limit 1)), 0)::float8 as age`,
  );
  const unregister = [
    sampled.outboxBacklog(async () => [{ labels: label, value: (await readBacklog())[0]?.n ?? 0 }]),
    sampled.outboxOldestAge(async () => [{ labels: label, value: (await readBacklog())[0]?.age ?? 0 }]),
  ];

  /** Publishes one row; with tracing on, in a producer span continuing the writer's trace. */
  const publish = (r: R): Promise<Stored> => {
    const data = encoder.encode(JSON.stringify(r.payload));
    if (!tracingEnabled() || !r.traceparent) return opts.publisher.publish(opts.subject(r), data, { msgID: r.event_id });
    const subject = opts.subject(r);
    return inSpan(
      `${subject} publish`,
      {
        kind: SpanKind.PRODUCER,
        parent: contextFromTraceparent(r.traceparent),
        attributes: { "messaging.system": "nats", "messaging.destination.name": subject, "messaging.message.id": r.event_id },
      },
      () => opts.publisher.publish(subject, data, { msgID: r.event_id, traceparent: currentTraceparent() ?? r.traceparent ?? undefined }),
    );
  };

  async function drainOnce(): Promise<number> {
    return opts.db.tx(async (t) => {
      // The lock and the read in one round trip; `relay_holds_lock` false: another relay holds it.
      // Typed by the caller's row type like any repository query (the table is the service's own).
      const rows = await t<Array<{ relay_holds_lock: boolean } & (R | { seq: null })>>`
        select l.relay_holds_lock, o.*
        from (select pg_try_advisory_xact_lock(hashtextextended(${opts.lock}, 0)) as relay_holds_lock) l
        left join lateral (select * from ${t(opts.table)} where l.relay_holds_lock order by seq limit ${batch}) o on true
        order by o.seq`;
      if (!rows[0]?.relay_holds_lock) return -1;
      const found = rows.filter((r): r is typeof r & R => r.seq !== null);
      if (found.length === 0) return 0;
      // Sent in outbox order on one connection, so the stream stores them in that order; the acks
      // are awaited together. (Only a publish the client must retry could land out of order.)
      const stored = await Promise.all(found.map(publish));
      const now = Date.now();
      for (const r of found) if (r.created_at) delay.observe(Math.max(0, now - r.created_at.getTime()) / 1000);
      published.inc(found.length);
      if (opts.onPublished)
        await opts.onPublished(
          t,
          found,
          stored.map((s) => s.seq),
        );
      // A lost delete (database crash) only re-sends rows the stream then drops as duplicates.
      await t`
        delete from ${t(opts.table)} using (select set_config('synchronous_commit', 'off', true)) as commit_mode
        where seq = any(${found.map((r) => r.seq)}::bigint[])`;
      return found.length;
    });
  }

  const loop = (async () => {
    while (!stopped) {
      pending = false;
      let n = 0;
      try {
        n = await drainOnce();
      } catch (err) {
        opts.log.warn({ err, table: opts.table }, "outbox relay failed; retrying");
      }
      if (n >= batch || (n >= 0 && pending)) continue;
      if (n < 0 && pending) {
        // Another replica's relay holds the lock; it will see these rows, but look again soon.
        await new Promise((res) => setTimeout(res, 25));
        continue;
      }
      await new Promise<void>((res) => {
        const timer = setTimeout(res, pollMs);
        wake = () => {
          clearTimeout(timer);
          res();
        };
      });
      wake = undefined;
    }
  })();

  return {
    notify(): void {
      pending = true;
      wake?.();
    },
    async stop(): Promise<void> {
      stopped = true;
      wake?.();
      await loop;
      for (const u of unregister) u();
    },
  };
}
