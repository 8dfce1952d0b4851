import type { Sql } from "./pool.js";

/**
 * Service-level idempotency records (DESIGN.md section 1): a write stores the request's
 * Idempotency-Key with its result in its own transaction, so a retry the gateway could not answer
 * gets the original result, never a twin. Each service keeps the table in its own schema:
 *
 *   create table idempotency (credential_id text, key text, operation text, result jsonb,
 *     created_at timestamptz default now(), primary key (credential_id, key));
 *
 * Records live 24 hours, like the gateway's.
 */
export function idempotencyRecords(sql: Sql) {
  return {
    async stored(credentialId: string, key: string): Promise<{ operation: string; result: unknown } | undefined> {
      const [row] = await sql<{ operation: string; result: unknown }[]>`
        select operation, result from idempotency where credential_id = ${credentialId} and key = ${key} and created_at > now() - interval '24 hours'`;
      return row;
    },

    /** Records a write's result under its key; false when another execution recorded it first. */
    async record(credentialId: string, key: string, operation: string, result: unknown): Promise<boolean> {
      const rows = await sql`
        insert into idempotency as i (credential_id, key, operation, result) values (${credentialId}, ${key}, ${operation}, ${sql.json(result as never)})
        on conflict (credential_id, key) do update set operation = excluded.operation, result = excluded.result, created_at = now()
          where i.created_at <= now() - interval '24 hours'
        returning 1`;
      return rows.length === 1;
    },

    async sweep(): Promise<void> {
      await sql`delete from idempotency where created_at < now() - interval '24 hours'`;
    },
  };
}
