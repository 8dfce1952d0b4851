import pg from "pg";
import { runner } from "node-pg-migrate";
import type { Logger } from "@tasksvc/logger";
import { DatabaseUnreachableError, quoteIdent, withDefaultUser } from "./pool.js";

export interface MigrateOptions {
  url: string;
  schema: string;
  /** Folder of forward-only plain SQL files, 0001_init.sql, 0002_… */
  dir: string;
  log: Logger;
}

/**
 * Applies a service's migrations to its schema. node-pg-migrate's own lock gives up when taken;
 * replicas starting together must wait instead, so we hold a session advisory lock keyed by the
 * schema on the same connection and tell the runner not to lock.
 */
export async function migrate(opts: MigrateOptions): Promise<void> {
  const client = new pg.Client({ connectionString: withDefaultUser(opts.url), connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
  } catch (e) {
    throw new DatabaseUnreachableError(opts.url, e);
  }
  try {
    await client.query("select pg_advisory_lock(hashtextextended($1, 0))", [`tasksvc:migrate:${opts.schema}`]);
    await client.query(`create schema if not exists ${quoteIdent(opts.schema)}`);
    const applied = await runner({
      dbClient: client,
      dir: opts.dir,
      direction: "up",
      schema: opts.schema,
      migrationsSchema: opts.schema,
      migrationsTable: "schema_migrations",
      noLock: true,
      singleTransaction: true,
      checkOrder: true,
      log: (msg: string) => opts.log.debug({ schema: opts.schema }, msg),
    });
    if (applied.length > 0) opts.log.info({ schema: opts.schema, applied: applied.map((m) => m.name) }, "migrated");
  } finally {
    await client.end().catch(() => {});
  }
}
