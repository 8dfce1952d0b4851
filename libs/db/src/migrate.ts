import pg from "pg";
import { runner } from "node-pg-migrate";
import type { Logger } from "@tasksvc/logger";
import { type Backfill, backfill } from "./backfill.js";
import { DatabaseUnreachableError, quoteIdent, withDefaultUser } from "./pool.js";

export type { Backfill } from "./backfill.js";

export interface MigrateOptions {
  url: string;
  schema: string;
  /** Folder of forward-only plain SQL files, 0001_init.sql, 0002_… */
  dir: string;
  log: Logger;
  /** Indexes built after the migrations with CREATE INDEX CONCURRENTLY (writers never wait for them). */
  indexes?: readonly ConcurrentIndex[];
  /** Columns filled for the rows from before them and then made not null, after the migrations. */
  backfills?: readonly Backfill[];
}

/** An index a large table gets without a lock that stops writes: `create index concurrently <name> <definition>`. */
export interface ConcurrentIndex {
  name: string;
  /** What follows the name: `on tasks (organization_id, created_at)`. */
  definition: string;
  /** A statement run once the index is built (`alter index … set statistics …`). */
  afterBuild?: string;
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
    for (const b of opts.backfills ?? []) await backfill(client, opts.schema, b, opts.log);
    // Released first: another replica waiting for it sits in a statement, and CREATE INDEX
    // CONCURRENTLY waits for every statement older than its own, so holding it would deadlock.
    await client.query("select pg_advisory_unlock(hashtextextended($1, 0))", [`tasksvc:migrate:${opts.schema}`]);
    if (opts.indexes?.length) await buildIndexes(client, opts.schema, opts.indexes, opts.log);
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * Builds the indexes that are missing, one at a time, outside any transaction. One replica builds
 * them (a try-lock: the others start at once and serve, slower, until the indexes exist); an index
 * an interrupted build left invalid is dropped and built again.
 */
async function buildIndexes(client: pg.Client, schema: string, indexes: readonly ConcurrentIndex[], log: Logger): Promise<void> {
  const lock = `tasksvc:indexes:${schema}`;
  const { rows } = await client.query<{ ok: boolean }>("select pg_try_advisory_lock(hashtextextended($1, 0)) as ok", [lock]);
  if (!rows[0]?.ok) {
    log.info({ schema }, "another replica is building the indexes");
    return;
  }
  try {
    // The schema's own names first; then where extensions' operator classes live (gin_trgm_ops).
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
