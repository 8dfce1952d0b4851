import type pg from "pg";
import type { Logger } from "@tasksvc/logger";
import { quoteIdent } from "./pool.js";

/**
 * A column that rows from before it lack (added nullable, so that adding it rewrote no row),
 * filled after the migrations and then made not null. Its migration gives it a default first, so
 * that no row written meanwhile (by a replica of the previous release) lacks it.
 */
export interface Backfill {
  table: string;
  column: string;
  /** Its value for a row that lacks it: an SQL expression over the row's columns. */
  value: string;
}

/**
 * Heap pages per batch: 2 MB of the table, about 7,000 tasks of a typical size, filled in half
 * a second with every index updated. A write to one of those rows waits at most that long.
 */
const BATCH_PAGES = 256;

/**
 * Fills a Backfill's column, a batch of pages per transaction (one UPDATE of a million rows in the
 * migrations' transaction held each of them against writes for over a minute). Run under the
 * migrations' lock, so that no replica serves before every row has the value; a replica starting
 * after it finds the column not null and does nothing. Safe to interrupt: a restart goes on.
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
  // Page ranges (a TID range scan reads only them), not `limit`: each batch reads its own pages
  // once, where a search for the next rows that lack the value would read every filled row again.
  for (let from = 0; from < Number(found.pages); from += BATCH_PAGES) {
    const r = await client.query(`${fill} and ctid >= '(${from},0)'::tid and ctid < '(${from + BATCH_PAGES},0)'::tid`);
    filled += r.rowCount ?? 0;
  }
  // A row another statement moved behind the pass (an update writes a new tuple, maybe on a page
  // already done) still lacks it: filled with writers held off, then the column is made not null
  // (a scan of the table, a fraction of a second for a million rows). Readers are never held off
  // but by the ALTER itself; a writer waits for that one scan.
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
