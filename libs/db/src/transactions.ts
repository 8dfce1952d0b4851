import type postgres from "postgres";
import {
  currentTraceparent,
  dbTransactionDuration,
  dbTransactionSlotTimeouts,
  dbTransactionWait,
  inChildSpan,
  SpanKind,
  secondsSince,
} from "@tasksvc/telemetry";
import { DatabaseReadOnly, FEATURE_NOT_SUPPORTED, isConnectionError, isPgError, PG, READ_ONLY_SQL_TRANSACTION } from "./errors.js";

type Sql = postgres.Sql;
type TxSql = postgres.TransactionSql;

export interface TxOptions {
  /**
   * Runs of the whole transaction function after a deadlock (40P01) or a serialization failure
   * (40001), which roll everything back and are safe to retry. Default 5; 1 means no retry. The
   * function must therefore have no effect outside the transaction before it returns.
   */
  attempts?: number;
}

const RETRYABLE = new Set<string>([PG.serializationFailure, PG.deadlockDetected]);

/** An error that leaves the transaction's outcome to the server: its connection is gone. */
export class TransactionConnectionLost extends Error {
  readonly code = "CONNECTION_CLOSED";
  constructor() {
    super("the transaction's connection closed before it committed; nothing of it was committed");
  }
}

/** No transaction slot came free within the deadline: the database is slow or unreachable (a 503). */
export class TransactionSlotTimeout extends Error {
  readonly code = "SLOT_WAIT_TIMEOUT";
  constructor(waitMs: number) {
    super(`no transaction connection came free within ${waitMs} ms (the database is slow or unreachable)`);
  }
}

interface Slot {
  sql: Sql;
  /** How many times its connection closed; a change during a transaction voids it. */
  closes: number;
  /** Set while a transaction holds the slot: fails it at once when the connection is lost. */
  lost?: () => void;
}

export interface TransactionPoolOptions {
  /** Attributes of every transaction's span. */
  spanAttributes?: Record<string, string>;
  /** The longest a transaction waits for a free slot before failing with TransactionSlotTimeout. */
  waitMs: number;
}

/**
 * Transactions on connections lent to one transaction at a time (decision 0011).
 *
 * Each slot is a postgres.js instance with one connection that only the transaction holding the
 * slot uses, so nothing else can ever run inside it. We send BEGIN, COMMIT and ROLLBACK
 * ourselves instead of the driver's begin(), whose reservation is what leaked transactions on a
 * shared pool and what wedged or crashed on a connection lost mid-transaction (postgres.js 3.4.9,
 * porsager/postgres#1189, #823, #1208). The rules that make that safe:
 *
 * - A connection that closed while the transaction ran voids it: the driver reconnects by itself,
 *   and a statement or a COMMIT sent on the new connection would run outside the transaction (a
 *   COMMIT there "succeeds" with a warning). So the close count is checked before COMMIT, and the
 *   instance is ended the moment its connection closes during a transaction, so that later
 *   statements of the function fail instead of running on a new connection.
 * - COMMIT of a transaction that failed earlier answers ROLLBACK without an error: checked.
 * - After anything unclear (a lost connection, a failed ROLLBACK), the slot gets a new instance;
 *   so does a slot whose connection closed while idle, since an instance never reconnects.
 * - A slot's connection is read-only outside BEGIN READ WRITE (default_transaction_read_only):
 *   a statement the driver still held when the connection was lost is sent, after it reconnects,
 *   on a connection outside the transaction, and ending the instance cannot stop it once it is the
 *   reconnect's first query; the server then refuses it as a write outside a transaction.
 * - Every wait has an end. A slot is waited for `waitMs` at most. A transaction whose connection
 *   is lost fails at once, whatever the driver does with the statements it still holds: a
 *   connection lost while it was starting left them queued in the instance for ever (postgres.js
 *   3.4.9 neither sends nor rejects them, and its end() resolves without them), which kept the
 *   slot, and every transaction queued behind it, waiting for ever.
 */
export function transactionPool(size: number, connect: (onclose: () => void) => Sql, opts: TransactionPoolOptions) {
  const spanAttributes = opts.spanAttributes ?? {};
  const make = (): Slot => {
    const slot: Slot = { sql: undefined as unknown as Sql, closes: 0 };
    slot.sql = connect(() => {
      slot.closes++;
      if (active.has(slot)) {
        void slot.sql.end({ timeout: 0 }).catch(() => undefined);
        slot.lost?.();
      }
    });
    return slot;
  };
  const slots = Array.from({ length: size }, make);
  const idle = [...slots];
  const active = new Set<Slot>();
  interface Waiter {
    resolve: (slot: Slot) => void;
    reject: (e: Error) => void;
    timer: NodeJS.Timeout;
  }
  const waiting: Waiter[] = [];
  let ended = false;
  const closedError = () => new Error("the database pool is closed");

  const acquire = (): Promise<Slot> => {
    if (ended) return Promise.reject(closedError());
    const slot = idle.pop();
    if (slot) return Promise.resolve(slot);
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        resolve,
        reject,
        timer: setTimeout(() => {
          const at = waiting.indexOf(waiter);
          if (at >= 0) waiting.splice(at, 1);
          dbTransactionSlotTimeouts.inc();
          reject(new TransactionSlotTimeout(opts.waitMs));
        }, opts.waitMs),
      };
      waiting.push(waiter);
    });
  };
  const release = (slot: Slot): void => {
    const next = waiting.shift();
    if (next) {
      clearTimeout(next.timer);
      next.resolve(slot);
    } else idle.push(slot);
  };
  /** A fresh instance in place of one whose state we no longer trust. */
  const replace = (slot: Slot): Slot => {
    void slot.sql.end({ timeout: 0 }).catch(() => undefined);
    const fresh = make();
    slots[slots.indexOf(slot)] = fresh;
    return fresh;
  };

  async function once<T>(fn: (t: TxSql) => Promise<T>): Promise<T> {
    const asked = performance.now();
    let slot = await acquire();
    // Its driver instance never reconnects (pool.ts, oneConnection): one whose connection closed
    // while idle (idle timeout, a server restart) is replaced before it is used.
    if (slot.closes > 0) slot = replace(slot);
    const started = performance.now();
    dbTransactionWait.observe((started - asked) / 1000);
    const closes = slot.closes;
    // Settles only when the connection is lost during the transaction (the slot's onclose); every
    // await below races it, so nothing here waits on a statement the driver will never settle.
    let abandon = () => {};
    let committing = false;
    const lost = new Promise<never>((_, reject) => {
      // Lost once COMMIT is sent, the outcome is the server's to know (the answer never came).
      abandon = () =>
        reject(
          committing
            ? Object.assign(new Error("the transaction's connection closed during COMMIT: it may or may not have committed"), { code: "CONNECTION_CLOSED" })
            : new TransactionConnectionLost(),
        );
    });
    lost.catch(() => undefined);
    const guarded = <R>(p: Promise<R>): Promise<R> => Promise.race([p, lost]);
    slot.lost = abandon;
    active.add(slot);
    let trusted = true;
    let outcome = "rollback";
    let refused: unknown;
    try {
      // BEGIN goes out now and the function's first statement right behind it on the same
      // connection (one round trip saved); both are sent before any socket event can intervene.
      // READ WRITE: the slot's connections are read-only outside it (pool.ts), so a statement the
      // driver re-sends on a new connection after a loss cannot commit a part of the transaction.
      const begun = slot.sql`begin read write`.execute();
      // Awaited below; a failure surfaces there or in fn. Noted first, so that the catch below
      // knows a BEGIN a standby refused from the statements that then ran outside it.
      begun.catch((e: unknown) => {
        refused = e;
      });
      // With tracing on, the transaction's span as a transaction-local setting, pipelined behind
      // BEGIN: the default of every `traceparent` column (outbox rows, deliveries), so the rows
      // a transaction writes carry its trace to whoever handles them later (decision 0017).
      const traceparent = currentTraceparent();
      const traced = traceparent ? slot.sql`select set_config('tasksvc.traceparent', ${traceparent}, true)`.execute() : undefined;
      traced?.catch(() => undefined);
      const result = await guarded(fn(slot.sql as unknown as TxSql));
      await guarded(begun);
      if (traced) await guarded(traced);
      if (slot.closes !== closes) throw new TransactionConnectionLost();
      committing = true;
      const done = await guarded(slot.sql`commit`.execute());
      // COMMIT of a transaction aborted by an error the function swallowed is a ROLLBACK.
      if (done.command !== "COMMIT") throw new Error(`the transaction was rolled back (${done.command}): a statement in it failed`);
      outcome = "commit";
      return result;
    } catch (e) {
      // BEGIN READ WRITE refused: by a standby (0A000, "cannot set transaction read-write mode
      // during recovery") or a read-only server (25006). The slot's connection is on a node that
      // is not the primary: dropped, so the next transaction connects through the URL again.
      if (isPgError(refused) && (refused.code === FEATURE_NOT_SUPPORTED || refused.code === READ_ONLY_SQL_TRANSACTION)) {
        trusted = false;
        throw new DatabaseReadOnly(refused);
      }
      // 25006 on a slot is a statement that reached the server outside our BEGIN READ WRITE: the
      // driver re-sent it on a new connection after losing the old one, without always telling
      // us (a connection lost while it was still starting calls no onclose). The same as a close.
      const resentOutside = isPgError(e) && e.code === READ_ONLY_SQL_TRANSACTION;
      if (slot.closes !== closes || resentOutside) trusted = false;
      else {
        try {
          await guarded(slot.sql`rollback`.execute());
        } catch {
          trusted = false;
        }
      }
      const lostConnection = slot.closes !== closes || resentOutside;
      throw lostConnection && !(e instanceof TransactionConnectionLost) && !isConnectionError(e) ? new TransactionConnectionLost() : e;
    } finally {
      dbTransactionDuration.observe({ outcome }, secondsSince(started));
      slot.lost = undefined;
      active.delete(slot);
      if (!trusted && !ended) slot = replace(slot);
      release(slot);
    }
  }

  return {
    /** Runs `fn` in one transaction on a connection lent to it alone; retries deadlocks. */
    tx<T>(fn: (t: TxSql) => Promise<T>, opts: TxOptions = {}): Promise<T> {
      return inChildSpan("db.transaction", { kind: SpanKind.CLIENT, attributes: { "db.system.name": "postgresql", ...spanAttributes } }, async (span) => {
        const attempts = Math.max(1, opts.attempts ?? 5);
        for (let attempt = 1; ; attempt++) {
          try {
            return await once(fn);
          } catch (e) {
            if (attempt >= attempts || !isPgError(e) || !RETRYABLE.has(e.code)) throw e;
            span.addEvent("retry", { "db.response.status_code": e.code });
          }
          // Jittered and growing, so the transactions that collided do not collide again at once.
          await new Promise((r) => setTimeout(r, Math.random() * 5 * 2 ** attempt));
        }
      });
    },
    /** Slots in use, transactions waiting for one, and the size (the pool's state for metrics). */
    stats: () => ({ inUse: active.size, waiting: waiting.length, size }),
    async end(opts: { timeout?: number } = {}): Promise<void> {
      ended = true;
      for (const w of waiting.splice(0)) {
        clearTimeout(w.timer);
        w.reject(closedError());
      }
      await Promise.all(slots.map((s) => s.sql.end(opts)));
    },
  };
}
