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

export interface OutboxRow {
  /** int8 comes back from postgres.js as text. */
  seq: string;
  event_id: string;
  payload: unknown;
  created_at?: Date;
  /** Filled by the column's default from the writing transaction's `tasksvc.traceparent`. */
  traceparent?: string | null;
}

/** A JetStreamClient is one as it stands; named here because libs/db may not import libs/nats. */
export interface OutboxPublisher {
  publish(subject: string, data: Uint8Array, opts: { msgID: string; traceparent?: string }): Promise<Stored>;
}

export interface Stored {
  seq: number;
}

interface RelayBasics {
  db: Pick<Database, "tx" | "sql">;
  /** Quoted by the driver; bare, it resolves through the search_path (the service's schema). */
  table: string;
  /** The same name in every replica and version of a service: only one relay may work the table. */
  lock: string;
  log: Logger;
  /** Looks for rows no local write announced (other replicas, a crashed relay). Default 500 ms. */
  pollMs?: number;
  batch?: number;
  /** How long a relay that found rows while more were announced waits before its next batch. Default 5 ms. */
  lingerMs?: number;
}

/** Rows published to JetStream. */
export interface PublishingRelayOptions<R extends OutboxRow> extends RelayBasics {
  publisher: OutboxPublisher;
  subject(row: R): string;
  /** In the batch's transaction, before its rows are deleted; batches go one after the other, so what it records covers a prefix of the stream. */
  onPublished?: (t: Sql, rows: readonly R[], seqs: readonly number[]) => Promise<unknown>;
  /** Read per batch, since a reconnect may reach another server; a row that would not fit is set aside rather than refused by the client. */
  maxPayload?: () => number | undefined;
  deadLetters?: string;
  deliver?: undefined;
}

/**
 * Rows whose destination is in the same database: `deliver` writes what they carry there in the
 * batch's transaction, in `seq` order, and they are deleted in it too; nothing crosses NATS. A row
 * `decode` refuses can never be delivered: it is set aside in the dead-letter table (reason
 * `refused`) and the rows behind it go on.
 */
export interface LocalRelayOptions<R extends OutboxRow, M> extends RelayBasics {
  decode(row: R): { value: M } | { refused: string };
  deliver(t: Sql, items: readonly M[]): Promise<void>;
  deadLetters?: string;
}

export type OutboxRelayOptions<R extends OutboxRow, M = never> = PublishingRelayOptions<R> | LocalRelayOptions<R, M>;

export const DEAD_LETTER_REASONS = ["max_payload", "max_msg_size", "refused"] as const;
export type DeadLetterReason = (typeof DEAD_LETTER_REASONS)[number];

/** Headers the publisher adds (Nats-Msg-Id, traceparent) count toward max_payload, so a message this close to the limit could never be sure to pass. */
const HEADER_ALLOWANCE_BYTES = 1024;

const JS_MESSAGE_TOO_LARGE = 10054;

/** By class name and API code, never text (libs/db may not import the NATS client); undefined when a retry may succeed. */
function permanentFailure(err: unknown): DeadLetterReason | undefined {
  if (!(err instanceof Error)) return undefined;
  if (err.name === "InvalidArgumentError") return "refused";
  if (err.name === "JetStreamApiError" && (err as Error & { code?: unknown }).code === JS_MESSAGE_TOO_LARGE) return "max_msg_size";
  return undefined;
}

export interface OutboxRelay {
  notify(): void;
  stalled(afterMs: number): Promise<boolean>;
  stop(): Promise<void>;
}

const encoder = new TextEncoder();

/** The runtime reads a replica's relays for its readiness without each service wiring them in. */
const relaysByPool = new WeakMap<object, Set<{ table: string; relay: OutboxRelay }>>();

export interface OutboxDrain {
  outbox: string;
  stalled: boolean;
}

/** A replica whose attempts find the lock held by another's relay is never stalled: failing it too would take every replica out for one relay's trouble. */
export async function outboxDrains(db: Pick<Database, "sql">, afterMs: number): Promise<OutboxDrain[]> {
  const relays = [...(relaysByPool.get(db.sql) ?? [])];
  const stalled = await Promise.all(relays.map((r) => r.relay.stalled(afterMs)));
  return relays.map((r, i) => ({ outbox: r.table, stalled: stalled[i] ?? false }));
}

interface SetAside<R> {
  row: R;
  subject: string;
  bytes: number;
  reason: DeadLetterReason;
  detail: string;
}

/**
 * Publishes outbox rows in `seq` order, then deletes them in the transaction that read them, so a crash re-sends with the same
 * Nats-Msg-Id and the stream drops the duplicate (decisions 0008, 0031).
 */
export function startOutboxRelay<R extends OutboxRow, M = never>(opts: OutboxRelayOptions<R, M>): OutboxRelay {
  const pollMs = opts.pollMs ?? 500;
  const batch = opts.batch ?? 256;
  const lingerMs = opts.lingerMs ?? 5;
  let stopped = false;
  let wake: (() => void) | undefined;
  let pending = false;
  const label = { outbox: opts.table };
  const published = outboxPublished.labels(label);
  const delay = outboxRelayDelay.labels(label);
  const deadLetterTable = opts.deadLetters ?? `${opts.table}_dead_letters`;
  // Every reason's series exists at 0, so an alert's increase() sees the first one.
  for (const reason of DEAD_LETTER_REASONS) outboxDeadLetters.inc({ ...label, reason }, 0);
  // Counted up to 100000 rows so the scrape stays an index-only walk.
  const readBacklog = sharedFor(
    500,
    async () => opts.db.sql<Array<{ n: number; age: number }>>`
      select (select count(*)::int from (select 1 from ${opts.db.sql(opts.table)} limit 100000) c) as n,
             coalesce(extract(epoch from now() - (select created_at from ${opts.db.sql(opts.table)} order by seq limit 1)), 0)::float8 as age`,
  );
  let lastDrained = performance.now();
  let lastFailed: number | undefined;
  let attemptSince: number | undefined;
  const unregister = [
    sampled.outboxBacklog(async () => [{ labels: label, value: (await readBacklog())[0]?.n ?? 0 }]),
    sampled.outboxOldestAge(async () => [{ labels: label, value: (await readBacklog())[0]?.age ?? 0 }]),
  ];

  const publish = (p: PublishingRelayOptions<R>, r: R, data: Uint8Array): Promise<Stored> => {
    if (!tracingEnabled() || !r.traceparent) return p.publisher.publish(p.subject(r), data, { msgID: r.event_id });
    const subject = p.subject(r);
    return inSpan(
      `${subject} publish`,
      {
        kind: SpanKind.PRODUCER,
        parent: contextFromTraceparent(r.traceparent),
        attributes: { "messaging.system": "nats", "messaging.destination.name": subject, "messaging.message.id": r.event_id },
      },
      () => p.publisher.publish(subject, data, { msgID: r.event_id, traceparent: currentTraceparent() ?? r.traceparent ?? undefined }),
    );
  };

  /** Its statements are sent at the call, before it yields. */
  async function setAside(t: Sql, aside: readonly SetAside<R>[]): Promise<void> {
    await Promise.all(
      aside.map((a) =>
        t`
        insert into ${t(deadLetterTable)} (event_id, outbox_seq, subject, payload, bytes, reason, detail, written_at)
        select event_id, seq, ${a.subject}, payload, ${a.bytes}, ${a.reason}, ${a.detail}, ${a.row.created_at ?? null}::timestamptz
        from ${t(opts.table)} where seq = ${a.row.seq}
        on conflict (event_id) do nothing`.execute(),
      ),
    );
  }

  /**
   * Committed asynchronously: a lost delete only re-sends rows the stream drops as duplicates, or,
   * delivered locally, loses the delivery with it (one transaction), so the rows go again.
   */
  const deleteRows = (t: Sql, rows: readonly R[]) =>
    t`
      delete from ${t(opts.table)} using (select set_config('synchronous_commit', 'off', true)) as commit_mode
      where seq = any(${rows.map((r) => r.seq)}::bigint[])`.execute();

  function carried(rows: readonly R[]): void {
    const now = Date.now();
    for (const r of rows) if (r.created_at) delay.observe(Math.max(0, now - r.created_at.getTime()) / 1000);
    published.inc(rows.length);
  }

  /** Rows handled (published or set aside), -1 when another relay holds the lock. */
  async function drainOnce(): Promise<{ n: number; aside: SetAside<R>[] }> {
    return opts.db.tx(async (t) => {
      // Two statements, sent together (one round trip): a statement's snapshot is taken before it
      // runs, so rows read in the statement that took the lock could include rows the previous
      // holder deleted just before releasing it. The second reads rows only if it holds the lock
      // itself (a lock held already is taken again), and counts only if the first took it.
      const [[lock], found] = await Promise.all([
        t<Array<{ relay_holds_lock: boolean }>>`select pg_try_advisory_xact_lock(hashtextextended(${opts.lock}, 0)) as relay_holds_lock`,
        t<R[]>`select * from ${t(opts.table)} where (select pg_try_advisory_xact_lock(hashtextextended(${opts.lock}, 0))) order by seq limit ${batch}`,
      ]);
      if (!lock?.relay_holds_lock) return { n: -1, aside: [] };
      if (found.length === 0) return { n: 0, aside: [] };
      if (opts.deliver !== undefined) {
        const items: M[] = [];
        const delivered: R[] = [];
        const aside: SetAside<R>[] = [];
        for (const row of found) {
          const d = opts.decode(row);
          if ("value" in d) {
            items.push(d.value);
            delivered.push(row);
          } else {
            const bytes = encoder.encode(JSON.stringify(row.payload)).byteLength;
            aside.push({ row, subject: `(delivered locally) ${opts.table}`, bytes, reason: "refused", detail: d.refused });
          }
        }
        // Set aside before the delete, which goes out with the delivery's first statements.
        await Promise.all([setAside(t, aside), deleteRows(t, found), items.length > 0 ? opts.deliver(t, items) : undefined]);
        carried(delivered);
        return { n: found.length, aside };
      }
      const p = opts;
      const limit = p.maxPayload?.();
      const aside: SetAside<R>[] = [];
      const sending: Array<{ row: R; data: Uint8Array }> = [];
      for (const row of found) {
        const data = encoder.encode(JSON.stringify(row.payload));
        if (limit !== undefined && data.byteLength + HEADER_ALLOWANCE_BYTES > limit)
          aside.push({
            row,
            subject: p.subject(row),
            bytes: data.byteLength,
            reason: "max_payload",
            detail: `${data.byteLength} bytes, with ${HEADER_ALLOWANCE_BYTES} for headers, exceed the connection's max_payload of ${limit}`,
          });
        else sending.push({ row, data });
      }
      // Sent in outbox order on one connection, so the stream stores them in that order.
      const outcomes = await Promise.allSettled(sending.map((s) => publish(p, s.row, s.data)));
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
        if (reason === undefined) throw o.reason;
        const detail = o.reason instanceof Error ? `${o.reason.name}: ${o.reason.message}` : String(o.reason);
        aside.push({ row: s.row, subject: p.subject(s.row), bytes: s.data.byteLength, reason, detail });
      }
      carried(sent);
      // Sent together (one round trip), in this order.
      await Promise.all([p.onPublished && sent.length > 0 ? p.onPublished(t, sent, stored) : undefined, setAside(t, aside), deleteRows(t, found)]);
      return { n: found.length, aside };
    });
  }

  // Only once the transaction committed, so a rolled-back batch is not counted.
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
      if (n >= batch) continue;
      if (n >= 0 && pending) {
        // Rows keep coming while batches go out: a moment's wait lets the next carry several, its
        // round trips shared, and the consumers downstream receive them together. A row after a
        // quiet spell goes at once.
        if (n > 0 && lingerMs > 0) await new Promise((res) => setTimeout(res, lingerMs));
        continue;
      }
      if (n < 0 && pending) {
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
