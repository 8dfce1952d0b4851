import type { Logger } from "@tasksvc/logger";
import {
  contextFromTraceparent,
  currentTraceparent,
  inSpan,
  outboxDeadLetters,
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
  /**
   * The largest message the connection takes: the `max_payload` of the server info it received at
   * connect (`() => nc.info?.max_payload`), read per batch since a reconnect may reach another
   * server. A row whose message would not fit is set aside unsent; without it, only the NATS
   * client's own refusal of the publish tells.
   */
  maxPayload?: () => number | undefined;
  /**
   * Where rows that can never be published go, in the outbox's schema; default
   * `<table>_dead_letters`. The same columns in every service that has an outbox:
   *
   * ```sql
   * create table outbox_dead_letters (
   *   event_id         text primary key,      -- the row's event_id
   *   outbox_seq       bigint not null,       -- its place in the outbox
   *   subject          text not null,         -- where it was to be published
   *   payload          jsonb not null,        -- the message, as the outbox held it
   *   bytes            integer not null,      -- its size, encoded
   *   reason           text not null,         -- a DeadLetterReason
   *   detail           text not null,         -- what the relay or the client said
   *   written_at       timestamptz,           -- when the outbox row was written, when known
   *   dead_lettered_at timestamptz not null default now()
   * );
   * ```
   */
  deadLetters?: string;
}

/**
 * Why a row was set aside: `max_payload`, its message is larger than the connection takes;
 * `max_msg_size`, the stream refused it for its size; `refused`, the NATS client refused the
 * publish as invalid (over its server's max_payload when the relay was not told the limit).
 */
export const DEAD_LETTER_REASONS = ["max_payload", "max_msg_size", "refused"] as const;
export type DeadLetterReason = (typeof DEAD_LETTER_REASONS)[number];

/**
 * Room kept beside a message for the headers the publisher adds (Nats-Msg-Id, traceparent: about
 * 150 bytes), which count toward max_payload: a message within this much of the limit is set
 * aside, as its publish could never be sure to pass.
 */
const HEADER_ALLOWANCE_BYTES = 1024;

/** JetStream's API error for a message over the stream's max_msg_size (JSStreamMessageExceedsMaximumErr). */
const JS_MESSAGE_TOO_LARGE = 10054;

/**
 * Why a failed publish would fail the same way however often it is retried, or undefined when a
 * retry may succeed (NATS down, a timeout, no responders: today's retry). libs/db may not import
 * the NATS client, so its errors are recognised by their class name and API code, never by text.
 */
function permanentFailure(err: unknown): DeadLetterReason | undefined {
  if (!(err instanceof Error)) return undefined;
  // Thrown by the client before anything is sent: the same bytes are refused the same way again.
  if (err.name === "InvalidArgumentError") return "refused";
  if (err.name === "JetStreamApiError" && (err as Error & { code?: unknown }).code === JS_MESSAGE_TOO_LARGE) return "max_msg_size";
  return undefined;
}

export interface OutboxRelay {
  /** A local transaction committed outbox rows: publish now rather than at the next poll. */
  notify(): void;
  /** Whether this relay is stalled for `afterMs` (see `outboxDrains`). */
  stalled(afterMs: number): Promise<boolean>;
  /** Finishes the batch in progress (published rows are deleted) and stops; the rest stays for the next relay. */
  stop(): Promise<void>;
}

const encoder = new TextEncoder();

/**
 * The relays this process runs, by the pool they work (`db.sql`): the runtime reads the relays of
 * a replica's own database for its readiness without each service wiring them in.
 */
const relaysByPool = new WeakMap<object, Set<{ table: string; relay: OutboxRelay }>>();

/** One relay of a replica, and whether it is stalled. */
export interface OutboxDrain {
  /** The outbox table, as the relay names it. */
  outbox: string;
  stalled: boolean;
}

/**
 * The outbox relays this process runs on `db`, each stalled or not for `afterMs`: its own attempts
 * fail or hang, it has published nothing for `afterMs`, and rows wait in its outbox, the oldest
 * older than `afterMs`. A replica whose attempts find the lock held by another replica's relay is
 * never stalled: it is not the one that can publish, and failing it too would take every replica
 * out for one relay's trouble. Every replica whose own attempts fail (NATS or the stream gone:
 * each takes the lock in turn and fails) is.
 */
export async function outboxDrains(db: Pick<Database, "sql">, afterMs: number): Promise<OutboxDrain[]> {
  const relays = [...(relaysByPool.get(db.sql) ?? [])];
  const stalled = await Promise.all(relays.map((r) => r.relay.stalled(afterMs)));
  return relays.map((r, i) => ({ outbox: r.table, stalled: stalled[i] ?? false }));
}

/** A row that will never be published, and why. */
interface SetAside<R> {
  row: R;
  subject: string;
  bytes: number;
  reason: DeadLetterReason;
  detail: string;
}

/**
 * Publishes outbox rows in `seq` order, then deletes them (DESIGN.md section 5).
 *
 * - One relay at a time per lock name: a transaction-scoped advisory lock, tried without waiting,
 *   so every replica runs a relay and one of them works (keeps the stream in outbox order).
 * - Rows are deleted only after the publisher acknowledged them, in the same transaction that read
 *   them: a crash between publish and delete leaves the rows, which are published again with the
 *   same Nats-Msg-Id (the row's event_id), and the stream drops the duplicate within its duplicate
 *   window. For the same reason the delete commits asynchronously: losing it re-sends, never loses.
 * - A row that can never be published (DESIGN.md section 20: over the connection's max_payload,
 *   or refused by the client or the stream for its size) is moved to the dead-letter table in the
 *   same transaction, counted and logged, and the rows behind it go on: one tenant's oversized
 *   event never holds up everyone's. Any other failure retries the whole batch, as before.
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
  const deadLetterTable = opts.deadLetters ?? `${opts.table}_dead_letters`;
  // Every reason's series exists from the start at 0, so that an alert's increase() sees the first one.
  for (const reason of DEAD_LETTER_REASONS) outboxDeadLetters.inc({ ...label, reason }, 0);
  // Scrape-time backlog: rows waiting (counted up to 100000, an index-only walk) and the oldest's age.
  const readBacklog = sharedFor(
    500,
    async () => opts.db.sql<Array<{ n: number; age: number }>>`
      select (select count(*)::int from (select 1 from ${opts.db.sql(opts.table)} limit 100000) c) as n,
             coalesce(extract(epoch from now() - (select created_at from ${opts.db.sql(opts.table)} order by seq limit 1)), 0)::float8 as age`,
  );
  // When this relay last drained (published, or found nothing to publish) and last failed, and
  // since when its attempt in progress runs: what `stalled` judges it by.
  let lastDrained = performance.now();
  let lastFailed: number | undefined;
  let attemptSince: number | undefined;
  const unregister = [
    sampled.outboxBacklog(async () => [{ labels: label, value: (await readBacklog())[0]?.n ?? 0 }]),
    sampled.outboxOldestAge(async () => [{ labels: label, value: (await readBacklog())[0]?.age ?? 0 }]),
  ];

  /** Publishes one row's encoded payload; with tracing on, in a producer span continuing the writer's trace. */
  const publish = (r: R, data: Uint8Array): Promise<Stored> => {
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

  /** Moves rows to the dead-letter table (their payload copied there by the database), once each. */
  async function setAside(t: Sql, aside: readonly SetAside<R>[]): Promise<void> {
    for (const a of aside)
      await t`
        insert into ${t(deadLetterTable)} (event_id, outbox_seq, subject, payload, bytes, reason, detail, written_at)
        select event_id, seq, ${a.subject}, payload, ${a.bytes}, ${a.reason}, ${a.detail}, ${a.row.created_at ?? null}::timestamptz
        from ${t(opts.table)} where seq = ${a.row.seq}
        on conflict (event_id) do nothing`;
  }

  /** Rows handled (published or set aside), -1 when another relay holds the lock; and those set aside. */
  async function drainOnce(): Promise<{ n: number; aside: SetAside<R>[] }> {
    return opts.db.tx(async (t) => {
      // The lock and the read in one round trip; `relay_holds_lock` false: another relay holds it.
      // Typed by the caller's row type like any repository query (the table is the service's own).
      const rows = await t<Array<{ relay_holds_lock: boolean } & (R | { seq: null })>>`
        select l.relay_holds_lock, o.*
        from (select pg_try_advisory_xact_lock(hashtextextended(${opts.lock}, 0)) as relay_holds_lock) l
        left join lateral (select * from ${t(opts.table)} where l.relay_holds_lock order by seq limit ${batch}) o on true
        order by o.seq`;
      if (!rows[0]?.relay_holds_lock) return { n: -1, aside: [] };
      const found = rows.filter((r): r is typeof r & R => r.seq !== null);
      if (found.length === 0) return { n: 0, aside: [] };
      const limit = opts.maxPayload?.();
      const aside: SetAside<R>[] = [];
      const sending: Array<{ row: R; data: Uint8Array }> = [];
      for (const row of found) {
        const data = encoder.encode(JSON.stringify(row.payload));
        if (limit !== undefined && data.byteLength + HEADER_ALLOWANCE_BYTES > limit)
          aside.push({
            row,
            subject: opts.subject(row),
            bytes: data.byteLength,
            reason: "max_payload",
            detail: `${data.byteLength} bytes, with ${HEADER_ALLOWANCE_BYTES} for headers, exceed the connection's max_payload of ${limit}`,
          });
        else sending.push({ row, data });
      }
      // Sent in outbox order on one connection, so the stream stores them in that order; the acks
      // are awaited together. (Only a publish the client must retry could land out of order.)
      const outcomes = await Promise.allSettled(sending.map((s) => publish(s.row, s.data)));
      const sent: R[] = [];
      const stored: number[] = [];
      for (const [i, o] of outcomes.entries()) {
        const s = sending[i];
        if (s === undefined) continue;
        if (o.status === "fulfilled") {
          sent.push(s.row);
          stored.push(o.value.seq);
          continue;
        }
        const reason = permanentFailure(o.reason);
        // A failure a retry may cure fails the batch: all of it is tried again, as before.
        if (reason === undefined) throw o.reason;
        const detail = o.reason instanceof Error ? `${o.reason.name}: ${o.reason.message}` : String(o.reason);
        aside.push({ row: s.row, subject: opts.subject(s.row), bytes: s.data.byteLength, reason, detail });
      }
      const now = Date.now();
      for (const r of sent) if (r.created_at) delay.observe(Math.max(0, now - r.created_at.getTime()) / 1000);
      published.inc(sent.length);
      if (opts.onPublished && sent.length > 0) await opts.onPublished(t, sent, stored);
      await setAside(t, aside);
      // A lost delete (database crash) only re-sends rows the stream then drops as duplicates.
      await t`
        delete from ${t(opts.table)} using (select set_config('synchronous_commit', 'off', true)) as commit_mode
        where seq = any(${found.map((r) => r.seq)}::bigint[])`;
      return { n: found.length, aside };
    });
  }

  /** Counted and logged once the rows are in the dead-letter table (their transaction committed). */
  const reportAside = (aside: readonly SetAside<R>[]): void => {
    for (const a of aside) {
      outboxDeadLetters.inc({ ...label, reason: a.reason });
      opts.log.error(
        { table: opts.table, deadLetters: deadLetterTable, eventId: a.row.event_id, subject: a.subject, bytes: a.bytes, reason: a.reason, detail: a.detail },
        "outbox row can never be published; set aside in the dead-letter table",
      );
    }
  };

  const loop = (async () => {
    while (!stopped) {
      pending = false;
      let n = 0;
      attemptSince = performance.now();
      try {
        const drained = await drainOnce();
        n = drained.n;
        if (n >= 0) lastDrained = performance.now();
        reportAside(drained.aside);
      } catch (err) {
        lastFailed = performance.now();
        opts.log.warn({ err, table: opts.table }, "outbox relay failed; retrying");
      }
      attemptSince = undefined;
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

  const relay: OutboxRelay = {
    notify(): void {
      pending = true;
      wake?.();
    },
    async stalled(afterMs: number): Promise<boolean> {
      const now = performance.now();
      if (now - lastDrained <= afterMs) return false;
      const failing = (lastFailed !== undefined && now - lastFailed < afterMs) || (attemptSince !== undefined && now - attemptSince > afterMs);
      if (!failing) return false;
      const backlog = (await readBacklog())[0];
      return backlog !== undefined && backlog.n > 0 && backlog.age * 1000 > afterMs;
    },
    async stop(): Promise<void> {
      stopped = true;
      wake?.();
      await loop;
      for (const u of unregister) u();
      registered.delete(entry);
    },
  };
  const registered = relaysByPool.get(opts.db.sql) ?? new Set();
  relaysByPool.set(opts.db.sql, registered);
  const entry = { table: opts.table, relay };
  registered.add(entry);
  return relay;
}
