import pg from "pg";
import { runner } from "node-pg-migrate";
import type { Logger } from "@tasksvc/logger";
import { type Backfill, backfill } from "./backfill.js";
import { DatabaseUnreachableError, quoteIdent, withDefaultUser } from "./pool.js";

export type { Backfill } from "./backfill.js";

export interface MigrateOptions {
  url: string;
  schema: string;
  /** Forward-only plain SQL files, 0001_init.sql, 0002_… */
  dir: string;
  log: Logger;
  indexes?: readonly ConcurrentIndex[];
  backfills?: readonly Backfill[];
}

export interface ConcurrentIndex {
  name: string;
  /** What follows the name: `on tasks (organization_id, created_at)`. */
  definition: string;
  afterBuild?: string;
}

/**
 * node-pg-migrate's own lock gives up when taken, and replicas starting together must wait, so we
 * hold a session advisory lock on the same connection and tell the runner not to lock.
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
    for (const b of opts.backfills ?? []) await backfill(client, opts.schema, b, opts.log);
    // Released first: CREATE INDEX CONCURRENTLY waits for every older statement, such as another replica waiting for this lock, so holding it would deadlock.
    await client.query("select pg_advisory_unlock(hashtextextended($1, 0))", [`tasksvc:migrate:${opts.schema}`]);
    if (opts.indexes?.length) await buildIndexes(client, opts.schema, opts.indexes, opts.log);
  } finally {
    await client.end().catch(() => {});
  }
}

/** One replica builds them (a try-lock: the others serve, slower, meanwhile); an index an interrupted build left invalid is dropped and built again. */
async function buildIndexes(client: pg.Client, schema: string, indexes: readonly ConcurrentIndex[], log: Logger): Promise<void> {
  const lock = `tasksvc:indexes:${schema}`;
  const { rows } = await client.query<{ ok: boolean }>("select pg_try_advisory_lock(hashtextextended($1, 0)) as ok", [lock]);
  if (!rows[0]?.ok) {
    log.info({ schema }, "another replica is building the indexes");
    return;
  }
  try {
    // Extensions' operator classes (gin_trgm_ops) live outside the schema.
    await client.query(`set search_path to ${quoteIdent(schema)}, extensions, public`);
    for (const ix of indexes) {
      const found = await client.query<{ valid: boolean }>(
        `select i.indisvalid as valid from pg_index i join pg_class c on c.oid = i.indexrelid join pg_namespace n on n.oid = c.relnamespace
         where n.nspname = $1 and c.relname = $2`,
        [schema, ix.name],
      );
      if (found.rows[0]?.valid) continue;
      if (found.rows[0]) await client.query(`drop index concurrently ${quoteIdent(schema)}.${quoteIdent(ix.name)}`);
      const started = performance.now();
      await client.query(`create index concurrently ${quoteIdent(ix.name)} ${ix.definition}`);
      if (ix.afterBuild) await client.query(ix.afterBuild);
      log.info({ schema, index: ix.name, ms: Math.round(performance.now() - started) }, "index built");
    }
  } finally {
    await client.query("select pg_advisory_unlock(hashtextextended($1, 0))", [lock]).catch(() => {});
  }
}
