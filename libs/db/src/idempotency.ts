import { AppError } from "@tasksvc/errors";
import type { Sql } from "./pool.js";
import { jsonb } from "./values.js";

/** Another execution recorded the same Idempotency-Key while this one ran: answer with its result. */
export class KeyRecordedMeanwhile extends Error {
  constructor() {
    super("another execution recorded this Idempotency-Key meanwhile");
    this.name = "KeyRecordedMeanwhile";
  }
}

/** A key stored for another operation is 422. Records live 24 hours, like the gateway's. */
export function storedResult<T>(row: { operation: string; result: unknown }, operation: string): T {
  if (row.operation !== operation) throw new AppError("idempotency_key_reused", "This Idempotency-Key was already used for a different request.");
  return row.result as T;
}

export function idempotencyRecords(sql: Sql) {
  /** Undefined also when there is no key. */
  async function replay<T>(credentialId: string, key: string | undefined, operation: string): Promise<T | undefined> {
    if (key === undefined) return undefined;
    const [row] = await sql<{ operation: string; result: T }[]>`
      select operation, result from idempotency where credential_id = ${credentialId} and key = ${key} and created_at > now() - interval '24 hours'`;
    return row && storedResult<T>(row, operation);
  }

  return {
    replay,

    /**
     * Waits for a twin execution of this key (a retry after a 503) to commit and returns what it stored: otherwise the twin's own checks
     * would refuse the retry with a 400 although the write it repeats succeeded.
     */
    async replayLocked<T>(credentialId: string, key: string | undefined, operation: string): Promise<T | undefined> {
      if (key === undefined) return undefined;
      await sql`select pg_advisory_xact_lock(hashtextextended(${`idempotency:${credentialId}:${key}`}, 0))`;
      // A statement of its own, so that under read committed it sees what the twin committed while we waited.
      return replay<T>(credentialId, key, operation);
    },

    /**
     * Throws KeyRecordedMeanwhile. `organizationId` goes to a table that has the column (the tasks
     * service's, which erases a task's records by organization).
     */
    async recordOnce(credentialId: string, key: string | undefined, operation: string, result: unknown, organizationId?: string): Promise<void> {
      if (key === undefined) return;
      const [column, value, update] =
        organizationId === undefined
          ? [sql``, sql``, sql``]
          : [sql`, organization_id`, sql`, ${organizationId}`, sql`, organization_id = excluded.organization_id`];
      const rows = await sql`
        insert into idempotency as i (credential_id, key, operation, result ${column}) values (${credentialId}, ${key}, ${operation}, ${jsonb(sql, result)} ${value})
        on conflict (credential_id, key) do update set operation = excluded.operation, result = excluded.result, created_at = now() ${update}
          where i.created_at <= now() - interval '24 hours'
        returning 1`;
      if (rows.length !== 1) throw new KeyRecordedMeanwhile();
    },

    /** After the failed transaction ended, so the other's commit is visible; a record aged out in between is a 500, since rerunning is unsafe. */
    async replayRecordedMeanwhile<T>(error: unknown, credentialId: string, key: string | undefined, operation: string): Promise<T> {
      if (!(error instanceof KeyRecordedMeanwhile)) throw error;
      const stored = await replay<T>(credentialId, key, operation);
      if (stored !== undefined) return stored;
      throw new AppError("internal_error", "The Idempotency-Key was recorded but its result could not be read back.");
    },

    /**
     * Before a plain insert of the key: a record past its 24 hours is deleted, a live one replayed,
     * in one round trip (the statement's delete and select see one snapshot, so the select tells the
     * live record by its age).
     */
    async replayOrDropExpired<T>(credentialId: string, key: string, operation: string): Promise<T | undefined> {
      const [row] = await sql<{ operation: string; result: T }[]>`
        with dropped as (
          delete from idempotency where credential_id = ${credentialId} and key = ${key} and created_at <= now() - interval '24 hours'
        )
        select operation, result from idempotency where credential_id = ${credentialId} and key = ${key} and created_at > now() - interval '24 hours'`;
      return row && storedResult<T>(row, operation);
    },

    async sweep(): Promise<void> {
      await sql`delete from idempotency where created_at < now() - interval '24 hours'`;
    },
  };
}
export type IdempotencyRecords = ReturnType<typeof idempotencyRecords>;

export interface WithIdempotency {
  idempotency: IdempotencyRecords;
}

interface KeyedWrite<R extends WithIdempotency, T> {
  /** On the autocommit pool: the replays before and after the transaction. */
  records: IdempotencyRecords;
  tx<U>(fn: (repo: R) => Promise<U>): Promise<U>;
  credentialId: string;
  key: string | undefined;
  operation: string;
  /** Stored with the record where the table has the column (see recordOnce). */
  organizationId?: string;
  /** Effects outside the database, after commit; not run for a replayed result (its execution ran its own). */
  afterCommit?(result: T): Promise<void> | void;
}

/** May run more than once: a deadlock retries the transaction. */
type Steps<R, P, T> =
  | { prepare?: undefined; work: (repo: R) => Promise<T> }
  | {
      /** Checks that need another service's answer: outside the transaction, skipped by a replay. */
      prepare: () => Promise<P>;
      work: (repo: R, prepared: P) => Promise<T>;
    };

export type IdempotentWrite<R extends WithIdempotency, P, T> = KeyedWrite<R, T> & Steps<R, P, T>;

/**
 * A stored result is replayed; otherwise, in one transaction, a twin in flight is waited for, or the work and its record commit
 * together. When an execution that took no lock recorded the key meanwhile, its result is the answer.
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
      await r.idempotency.recordOnce(credentialId, key, operation, result, w.organizationId);
      return { result, ran: true };
    });
  } catch (e) {
    return records.replayRecordedMeanwhile<T>(e, credentialId, key, operation);
  }
  if (outcome.ran) await w.afterCommit?.(outcome.result);
  return outcome.result;
}

async function transactionalWork<R, P, T>(s: Steps<R, P, T>): Promise<(repo: R) => Promise<T>> {
  if (s.prepare === undefined) return s.work;
  const prepared = await s.prepare();
  const work = s.work;
  return (r) => work(r, prepared);
}
