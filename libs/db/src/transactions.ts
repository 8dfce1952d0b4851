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
  /** Runs after a deadlock or serialization failure (default 5): the function must have no effect outside the transaction. */
  attempts?: number;
  /**
   * COMMIT goes out right behind the function's statements instead of after their answers: the
   * transaction is one round trip, and its locks are held only while the server runs it. Only for
   * a function that sends every statement before its first await (each with `.execute()`, in
   * order: a plain `await` sends a statement later than the COMMIT sent here) and decides nothing
   * from their answers. A failed statement makes the COMMIT a ROLLBACK, and its error is thrown.
   */
  commitAhead?: boolean;
}

const RETRYABLE = new Set<string>([PG.serializationFailure, PG.deadlockDetected]);

/** Its connection is gone, and nothing of it was committed. */
export class TransactionConnectionLost extends Error {
  readonly code = "CONNECTION_CLOSED";
  constructor() {
    super("the transaction's connection closed before it committed; nothing of it was committed");
  }
}

/** The database is slow or unreachable (a 503). */
export class TransactionSlotTimeout extends Error {
  readonly code = "SLOT_WAIT_TIMEOUT";
  constructor(waitMs: number) {
    super(`no transaction connection came free within ${waitMs} ms (the database is slow or unreachable)`);
  }
}

interface Slot {
  sql: Sql;
  /** A change during a transaction voids it. */
  closes: number;
  /** Fails the transaction holding the slot at once when the connection is lost. */
  lost?: () => void;
}

export interface TransactionPoolOptions {
  spanAttributes?: Record<string, string>;
  waitMs: number;
  /** What each transaction begins with (default `begin read write`). */
  begin?: string;
  /** Its transactions begin read only: a 25006 is then the function's own attempt to write, not a statement sent outside BEGIN. */
  readOnly?: boolean;
  /** Whether waits and durations count in the slot metrics (default true; a snapshot of minutes would swamp them). */
  measured?: boolean;
}

/**
 * We send BEGIN, COMMIT and ROLLBACK ourselves, as the driver's begin() leaked transactions (decision 0011). A connection that closed
 * during the transaction voids it, since the driver would reconnect and run later statements outside it; a lost connection fails the
 * transaction at once, since postgres.js 3.4.9 may leave queued statements unsettled for ever.
 */
export function transactionPool(size: number, connect: (onclose: () => void) => Sql, opts: TransactionPoolOptions) {
  const spanAttributes = opts.spanAttributes ?? {};
  const beginStatement = opts.begin ?? "begin read write";
  const measured = opts.measured ?? true;
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
  const replace = (slot: Slot): Slot => {
    void slot.sql.end({ timeout: 0 }).catch(() => undefined);
    const fresh = make();
    slots[slots.indexOf(slot)] = fresh;
    return fresh;
  };

  async function once<T>(fn: (t: TxSql) => Promise<T>, commitAhead: boolean): Promise<T> {
    const asked = performance.now();
    let slot = await acquire();
    // Its driver instance never reconnects, so one whose connection closed while idle is replaced.
    if (slot.closes > 0) slot = replace(slot);
    const started = performance.now();
    if (measured) dbTransactionWait.observe((started - asked) / 1000);
    const closes = slot.closes;
    // Settles only when the connection is lost; every await races it, so nothing waits on a statement the driver will never settle.
    let abandon = () => {};
    let committing = false;
    const lost = new Promise<never>((_, reject) => {
      // Lost once COMMIT is sent, the outcome is the server's to know.
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
      // BEGIN and the first statement go out together. READ WRITE: slots are read-only outside it, so a statement re-sent after a loss cannot commit alone.
      const begun = slot.sql.unsafe(beginStatement).execute();
      // Noted first, so the catch below can tell a BEGIN a standby refused.
      begun.catch((e: unknown) => {
        refused = e;
      });
      // The default of every `traceparent` column, so rows written here carry the trace (decision 0018).
      const traceparent = currentTraceparent();
      const traced = traceparent ? slot.sql`select set_config('tasksvc.traceparent', ${traceparent}, true)`.execute() : undefined;
      traced?.catch(() => undefined);
      const running = fn(slot.sql as unknown as TxSql);
      const ahead = commitAhead ? slot.sql`commit`.execute() : undefined;
      if (ahead) {
        committing = true;
        ahead.catch(() => undefined);
      }
      const result = await guarded(running);
      await guarded(begun);
      if (traced) await guarded(traced);
      if (slot.closes !== closes) throw new TransactionConnectionLost();
      committing = true;
      const done = await guarded(ahead ?? slot.sql`commit`.execute());
      // COMMIT of a transaction aborted by an error the function swallowed answers ROLLBACK.
      if (done.command !== "COMMIT") throw new Error(`the transaction was rolled back (${done.command}): a statement in it failed`);
      outcome = "commit";
      return result;
    } catch (e) {
      // BEGIN READ WRITE refused by a standby (0A000) or a read-only server (25006): drop the connection so the next transaction goes through the URL.
      if (isPgError(refused) && (refused.code === FEATURE_NOT_SUPPORTED || refused.code === READ_ONLY_SQL_TRANSACTION)) {
        trusted = false;
        throw new DatabaseReadOnly(refused);
      }
      // 25006 otherwise is a statement the driver re-sent outside our BEGIN after losing the connection, not always with an onclose: the same as a close.
      const resentOutside = !opts.readOnly && isPgError(e) && e.code === READ_ONLY_SQL_TRANSACTION;
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
      if (measured) dbTransactionDuration.observe({ outcome }, secondsSince(started));
      slot.lost = undefined;
      active.delete(slot);
      if (!trusted && !ended) slot = replace(slot);
      release(slot);
    }
  }

  return {
    /** Retries deadlocks. */
    tx<T>(fn: (t: TxSql) => Promise<T>, opts: TxOptions = {}): Promise<T> {
      return inChildSpan("db.transaction", { kind: SpanKind.CLIENT, attributes: { "db.system.name": "postgresql", ...spanAttributes } }, async (span) => {
        const attempts = Math.max(1, opts.attempts ?? 5);
        for (let attempt = 1; ; attempt++) {
          try {
            return await once(fn, opts.commitAhead === true);
          } catch (e) {
            if (attempt >= attempts || !isPgError(e) || !RETRYABLE.has(e.code)) throw e;
            span.addEvent("retry", { "db.response.status_code": e.code });
          }
          // Jittered, so the transactions that collided do not collide again at once.
          await new Promise((r) => setTimeout(r, Math.random() * 5 * 2 ** attempt));
        }
      });
    },
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
