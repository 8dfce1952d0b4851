import { AppError } from "@tasksvc/errors";
import type { Sql } from "./pool.js";
import { jsonb } from "./values.js";

/**
 * Another execution recorded the same Idempotency-Key while this one ran: answer with its result
 * (`replayRecordedMeanwhile`). Thrown by `recordOnce()`, and by a repository whose own statement
 * records the key (a unique violation of the idempotency table's key, or nothing inserted).
 */
export class KeyRecordedMeanwhile extends Error {
  constructor() {
    super("another execution recorded this Idempotency-Key meanwhile");
    this.name = "KeyRecordedMeanwhile";
  }
}

/**
 * Service-level idempotency records (DESIGN.md section 1): a write stores the request's
 * Idempotency-Key with its result in its own transaction, so a retry the gateway could not answer
 * gets the original result, never a twin. Each service keeps the table in its own schema:
 *
 *   create table idempotency (credential_id text, key text, operation text, result jsonb,
 *     created_at timestamptz default now(), primary key (credential_id, key));
 *
 * Records live 24 hours, like the gateway's. A keyed write goes through `idempotentWrite()`
 * below; a write that records its key in its own statement (a group-committed create, a keyed
 * mint) uses `replay()` before and `replayRecordedMeanwhile()` after.
 */
/**
 * A stored record's result as a replay of `operation` answers it: a key stored for another
 * operation is 422 idempotency_key_reused. For a repository whose own statement reads the record
 * (the keyed mint, which checks and records in one statement); `replay()` uses it too.
 */
export function storedResult<T>(row: { operation: string; result: unknown }, operation: string): T {
  if (row.operation !== operation) throw new AppError("idempotency_key_reused", "This Idempotency-Key was already used for a different request.");
  return row.result as T;
}

export function idempotencyRecords(sql: Sql) {
  /**
   * The stored result of `operation` under this key, or undefined (also when there is no key).
   * A key stored for another operation is 422 idempotency_key_reused.
   */
  async function replay<T>(credentialId: string, key: string | undefined, operation: string): Promise<T | undefined> {
    if (key === undefined) return undefined;
    const [row] = await sql<{ operation: string; result: T }[]>`
      select operation, result from idempotency where credential_id = ${credentialId} and key = ${key} and created_at > now() - interval '24 hours'`;
    return row && storedResult<T>(row, operation);
  }

  return {
    replay,

    /**
     * Inside the write's transaction, before its work: waits for any twin execution of this key
     * (a retry sent after a 503 while the first attempt still runs) to commit, then returns what
     * it stored. Without the wait the twin's own checks (a unique name, an entry already placed)
     * refused the retry with a 400 although the write it repeats had succeeded. The advisory lock
     * is held to the end of the transaction; nothing without a key takes it.
     */
    async replayLocked<T>(credentialId: string, key: string | undefined, operation: string): Promise<T | undefined> {
      if (key === undefined) return undefined;
      await sql`select pg_advisory_xact_lock(hashtextextended(${`idempotency:${credentialId}:${key}`}, 0))`;
      // A statement of its own: under read committed it sees what the twin committed while we
      // waited (the waiting statement's snapshot predates that commit).
      return replay<T>(credentialId, key, operation);
    },

    /** Records a write's result under its key (nothing without a key); throws KeyRecordedMeanwhile. */
    async recordOnce(credentialId: string, key: string | undefined, operation: string, result: unknown): Promise<void> {
      if (key === undefined) return;
      const rows = await sql`
        insert into idempotency as i (credential_id, key, operation, result) values (${credentialId}, ${key}, ${operation}, ${jsonb(sql, result)})
        on conflict (credential_id, key) do update set operation = excluded.operation, result = excluded.result, created_at = now()
          where i.created_at <= now() - interval '24 hours'
        returning 1`;
      if (rows.length !== 1) throw new KeyRecordedMeanwhile();
    },

    /**
     * The answer to a keyed write that failed with `error`: when another execution recorded the
     * key meanwhile (KeyRecordedMeanwhile), the result it stored; any other error is rethrown.
     * Run after the failed write's transaction ended, so that the other one's commit is visible.
     * A record that cannot be read back (it aged past 24 h in between) is a 500: the write may
     * have happened, so running it again is not safe.
     */
    async replayRecordedMeanwhile<T>(error: unknown, credentialId: string, key: string | undefined, operation: string): Promise<T> {
      if (!(error instanceof KeyRecordedMeanwhile)) throw error;
      const stored = await replay<T>(credentialId, key, operation);
      if (stored !== undefined) return stored;
      throw new AppError("internal_error", "The Idempotency-Key was recorded but its result could not be read back.");
    },

    /** Forgets a key's record once it is past the 24 h window (before a plain insert of the key). */
    async dropExpired(credentialId: string, key: string): Promise<void> {
      await sql`delete from idempotency where credential_id = ${credentialId} and key = ${key} and created_at <= now() - interval '24 hours'`;
    },

    async sweep(): Promise<void> {
      await sql`delete from idempotency where created_at < now() - interval '24 hours'`;
    },
  };
}
export type IdempotencyRecords = ReturnType<typeof idempotencyRecords>;

/** What `idempotentWrite` needs of a repository bound to a transaction: its records. */
export interface WithIdempotency {
  idempotency: IdempotencyRecords;
}

interface KeyedWrite<R extends WithIdempotency, T> {
  /** The records on the autocommit pool: the replays before and after the transaction. */
  records: IdempotencyRecords;
  /** Runs `fn` in one transaction with a repository bound to it (a domain's `deps.tx`). */
  tx<U>(fn: (repo: R) => Promise<U>): Promise<U>;
  /** Records are scoped to the credential; without a key the write just runs. */
  credentialId: string;
  key: string | undefined;
  /** A key serves one operation; reusing it for another is 422 idempotency_key_reused. */
  operation: string;
  /**
   * After the transaction in which `work` ran committed, before the answer: effects outside the
   * database (wake a relay, drop cached copies). Not run for a replayed result: the execution
   * that stored it ran its own.
   */
  afterCommit?(result: T): Promise<void> | void;
}

/** The write: inside the transaction, its result recorded with it. It may run more than once (a deadlock retries the transaction). */
type Steps<R, P, T> =
  | { prepare?: undefined; work: (repo: R) => Promise<T> }
  | {
      /** Checks that need no transaction (another service's answer): after the replay, before the transaction, skipped by a replay. */
      prepare: () => Promise<P>;
      work: (repo: R, prepared: P) => Promise<T>;
    };

export type IdempotentWrite<R extends WithIdempotency, P, T> = KeyedWrite<R, T> & Steps<R, P, T>;

/**
 * Runs a write once per Idempotency-Key (DESIGN.md section 1); every service's keyed write in a
 * transaction goes through here:
 *
 * 1. `replay()`: a retry of a write that committed gets its stored result (the cheap path).
 * 2. `prepare()`, if any, outside the transaction.
 * 3. In one transaction: `replayLocked()` waits for a twin execution of the key still in flight
 *    and answers what it stored; otherwise `work()` and `recordOnce()` of its result, so the
 *    write and its record commit together (a failed work records nothing).
 * 4. When `recordOnce()` finds the key recorded meanwhile (an execution that took no lock), the
 *    transaction is rolled back and that execution's result is the answer.
 *
 * Without a key, the work runs in its transaction and nothing is recorded or locked.
 */
export async function idempotentWrite<R extends WithIdempotency, P, T>(w: IdempotentWrite<R, P, T>): Promise<T> {
  const { records, credentialId, key, operation } = w;
  const prior = await records.replay<T>(credentialId, key, operation);
  if (prior !== undefined) return prior;
  const work = await transactionalWork(w);
  let outcome: { result: T; ran: boolean };
  try {
    outcome = await w.tx(async (r) => {
      const twin = await r.idempotency.replayLocked<T>(credentialId, key, operation);
      if (twin !== undefined) return { result: twin, ran: false };
      const result = await work(r);
      await r.idempotency.recordOnce(credentialId, key, operation, result);
      return { result, ran: true };
    });
  } catch (e) {
    return records.replayRecordedMeanwhile<T>(e, credentialId, key, operation);
  }
  if (outcome.ran) await w.afterCommit?.(outcome.result);
  return outcome.result;
}

/** The work with what `prepare()` found bound to it. */
async function transactionalWork<R, P, T>(s: Steps<R, P, T>): Promise<(repo: R) => Promise<T>> {
  if (s.prepare === undefined) return s.work;
  const prepared = await s.prepare();
  const work = s.work;
  return (r) => work(r, prepared);
}
