import { AppError } from "@tasksvc/errors";
import type { Sql } from "./pool.js";

/** Another execution recorded the same Idempotency-Key while this one ran: answer with its result. */
export class KeyRecordedMeanwhile extends Error {}

/**
 * Service-level idempotency records (DESIGN.md section 1): a write stores the request's
 * Idempotency-Key with its result in its own transaction, so a retry the gateway could not answer
 * gets the original result, never a twin. Each service keeps the table in its own schema:
 *
 *   create table idempotency (credential_id text, key text, operation text, result jsonb,
 *     created_at timestamptz default now(), primary key (credential_id, key));
 *
 * Records live 24 hours, like the gateway's. The flow of a keyed write:
 * `replay()` before the work (the cheap path of a retry); inside the write's transaction
 * `replayLocked()` first and `recordOnce()` last; on KeyRecordedMeanwhile, `replay()` again.
 */
export function idempotencyRecords(sql: Sql) {
  /**
   * The stored result of `operation` under this key, or undefined (also when there is no key).
   * A key stored for another operation is 422 idempotency_key_reused.
   */
  async function replay<T>(credentialId: string, key: string | undefined, operation: string): Promise<T | undefined> {
    if (key === undefined) return undefined;
    const [row] = await sql<{ operation: string; result: T }[]>`
      select operation, result from idempotency where credential_id = ${credentialId} and key = ${key} and created_at > now() - interval '24 hours'`;
    if (!row) return undefined;
    if (row.operation !== operation) throw new AppError("idempotency_key_reused", "This Idempotency-Key was already used for a different request.");
    return row.result;
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
        insert into idempotency as i (credential_id, key, operation, result) values (${credentialId}, ${key}, ${operation}, ${sql.json(result as never)})
        on conflict (credential_id, key) do update set operation = excluded.operation, result = excluded.result, created_at = now()
          where i.created_at <= now() - interval '24 hours'
        returning 1`;
      if (rows.length !== 1) throw new KeyRecordedMeanwhile();
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
