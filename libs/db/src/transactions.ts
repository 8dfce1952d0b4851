import type postgres from "postgres";
import { currentTraceparent, dbTransactionDuration, dbTransactionWait, inChildSpan, SpanKind, secondsSince } from "@tasksvc/telemetry";
import { isConnectionError, isPgError, PG } from "./errors.js";

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
/** read_only_sql_transaction: a write outside BEGIN READ WRITE on a slot's read-only connection. */
const READ_ONLY_TRANSACTION = "25006";

/** An error that leaves the transaction's outcome to the server: its connection is gone. */
export class TransactionConnectionLost extends Error {
  readonly code = "CONNECTION_CLOSED";
  constructor() {
    super("the transaction's connection closed before it committed; nothing of it was committed");
  }
}

interface Slot {
  sql: Sql;
  /** How many times its connection closed; a change during a transaction voids it. */
  closes: number;
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
 */
export function transactionPool(size: number, connect: (onclose: () => void) => Sql, spanAttributes: Record<string, string> = {}) {
  const make = (): Slot => {
    const slot: Slot = { sql: undefined as unknown as Sql, closes: 0 };
    slot.sql = connect(() => {
      slot.closes++;
      if (active.has(slot)) void slot.sql.end({ timeout: 0 }).catch(() => undefined);
    });
    return slot;
  };
  const slots = Array.from({ length: size }, make);
  const idle = [...slots];
  const active = new Set<Slot>();
  const waiting: Array<{ resolve: (slot: Slot) => void; reject: (e: Error) => void }> = [];
  let ended = false;
  const closedError = () => new Error("the database pool is closed");

  const acquire = (): Promise<Slot> => {
    if (ended) return Promise.reject(closedError());
    const slot = idle.pop();
    return slot ? Promise.resolve(slot) : new Promise((resolve, reject) => waiting.push({ resolve, reject }));
  };
  const release = (slot: Slot): void => {
    const next = waiting.shift();
    if (next) next.resolve(slot);
    else idle.push(slot);
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
    active.add(slot);
    let trusted = true;
    let outcome = "rollback";
    try {
      // BEGIN goes out now and the function's first statement right behind it on the same
      // connection (one round trip saved); both are sent before any socket event can intervene.
      // READ WRITE: the slot's connections are read-only outside it (pool.ts), so a statement the
      // driver re-sends on a new connection after a loss cannot commit a part of the transaction.
      const begun = slot.sql`begin read write`.execute();
      begun.catch(() => undefined); // awaited below; a failure surfaces there or in fn
      // With tracing on, the transaction's span as a transaction-local setting, pipelined behind
      // BEGIN: the default of every `traceparent` column (outbox rows, deliveries), so the rows
      // a transaction writes carry its trace to whoever handles them later (decision 0017).
      const traceparent = currentTraceparent();
      const traced = traceparent ? slot.sql`select set_config('tasksvc.traceparent', ${traceparent}, true)`.execute() : undefined;
      traced?.catch(() => undefined);
      const result = await fn(slot.sql as unknown as TxSql);
      await begun;
      await traced;
      if (slot.closes !== closes) throw new TransactionConnectionLost();
      const done = await slot.sql`commit`;
      // COMMIT of a transaction aborted by an error the function swallowed is a ROLLBACK.
      if (done.command !== "COMMIT") throw new Error(`the transaction was rolled back (${done.command}): a statement in it failed`);
      outcome = "commit";
      return result;
    } catch (e) {
      // 25006 on a slot is a statement that reached the server outside our BEGIN READ WRITE: the
      // driver re-sent it on a new connection after losing the old one, without always telling
      // us (a connection lost while it was still starting calls no onclose). The same as a close.
      const resentOutside = isPgError(e) && e.code === READ_ONLY_TRANSACTION;
      if (slot.closes !== closes || resentOutside) trusted = false;
      else {
        try {
          await slot.sql`rollback`;
        } catch {
          trusted = false;
        }
      }
      const lost = slot.closes !== closes || resentOutside;
      throw lost && !(e instanceof TransactionConnectionLost) && !isConnectionError(e) ? new TransactionConnectionLost() : e;
    } finally {
      dbTransactionDuration.observe({ outcome }, secondsSince(started));
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
      for (const w of waiting.splice(0)) w.reject(closedError());
      await Promise.all(slots.map((s) => s.sql.end(opts)));
    },
  };
}
