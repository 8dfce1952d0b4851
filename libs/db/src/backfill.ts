import type pg from "pg";
import type { Logger } from "@tasksvc/logger";
import { quoteIdent } from "./pool.js";

/**
 * A column added nullable (so adding it rewrote no row), filled after the migrations, then made
 * not null. Its migration gives it a default first, so rows a previous release writes meanwhile have it.
 */
export interface Backfill {
  table: string;
  column: string;
  /** An SQL expression over the row's columns. */
  value: string;
}

/** About 7,000 tasks, filled in half a second: a write to one of those rows waits at most that long. */
const BATCH_PAGES = 256;

/**
 * A batch of pages per transaction: one UPDATE of a million rows held each against writes for over
 * a minute. Under the migrations' lock, so no replica serves before every row has the value.
 */
export async function backfill(client: pg.Client, schema: string, b: Backfill, log: Logger): Promise<void> {
  const table = `${quoteIdent(schema)}.${quoteIdent(b.table)}`;
  const column = quoteIdent(b.column);
  const { rows } = await client.query<{ done: boolean; pages: string }>(
    `select a.attnotnull as done, pg_relation_size(a.attrelid) / current_setting('block_size')::int as pages
     from pg_attribute a where a.attrelid = $1::regclass and a.attname = $2 and not a.attisdropped`,
    [table, b.column],
  );
  const found = rows[0];
  if (!found) throw new Error(`backfill: ${schema}.${b.table} has no column ${b.column}`);
  if (found.done) return;
  const started = performance.now();
  const fill = `update ${table} set ${column} = ${b.value} where ${column} is null`;
  let filled = 0;
  // Page ranges (a TID range scan), not `limit`, so no batch reads every filled row again.
  for (let from = 0; from < Number(found.pages); from += BATCH_PAGES) {
    const r = await client.query(`${fill} and ctid >= '(${from},0)'::tid and ctid < '(${from + BATCH_PAGES},0)'::tid`);
    filled += r.rowCount ?? 0;
  }
  // A row an update moved behind the pass still lacks it: filled with writers held off, then the column is made not null (one scan of the table).
  await client.query("begin");
  try {
    await client.query("set local lock_timeout = '10s'");
    await client.query(`lock table ${table} in exclusive mode`);
    const r = await client.query(fill);
    filled += r.rowCount ?? 0;
    await client.query(`alter table ${table} alter column ${column} set not null`);
    await client.query("commit");
  } catch (e) {
    await client.query("rollback").catch(() => {});
    throw e;
  }
  log.info({ schema, table: b.table, column: b.column, filled, ms: Math.round(performance.now() - started) }, "column filled and made not null");
}
