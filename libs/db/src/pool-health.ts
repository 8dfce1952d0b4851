import postgres from "postgres";
import { type Database, type Sql, withDefaultUser } from "./pool.js";

export type DatabaseRole = "primary" | "standby" | "read_only";

/**
 * Asked on an autocommit connection (a slot's are read-only on purpose). A standby answers
 * `select 1` like a primary, and a session may refuse writes all the same, so both are asked.
 */
export async function databaseRole(sql: Sql): Promise<DatabaseRole> {
  const [row] = await sql<Array<{ recovery: boolean; read_only: boolean }>>`
    select pg_is_in_recovery() as recovery, current_setting('transaction_read_only') = 'on' as read_only`;
  if (row === undefined) throw new Error("the database answered no row to its role query");
  return row.recovery ? "standby" : row.read_only ? "read_only" : "primary";
}

/** The system identifier is the same on every physical copy, so a promoted standby is the same database. */
export interface DatabaseIdentity {
  systemIdentifier: string;
  database: string;
}

export async function databaseIdentity(sql: Sql): Promise<DatabaseIdentity> {
  const [row] = await sql<Array<{ system_identifier: string; database: string }>>`
    select system_identifier::text as system_identifier, current_database() as database from pg_control_system()`;
  if (row === undefined) throw new Error("the database answered no row to its identity query");
  return { systemIdentifier: row.system_identifier, database: row.database };
}

/** On a connection of its own that sets no session condition: why the pool, which refuses non-primaries as it connects, cannot. */
export async function nodeRole(url: string): Promise<DatabaseRole> {
  let target = url;
  try {
    target = withDefaultUser(url);
  } catch {
    // A URL the WHATWG parser refuses goes to the driver as it is: the pool took it at start.
  }
  const sql = postgres(target, { max: 1, connect_timeout: 1, prepare: false, onnotice: () => {}, connection: { application_name: "tasksvc-readiness" } });
  try {
    return await databaseRole(sql);
  } finally {
    await sql.end({ timeout: 0 });
  }
}

/** In seconds; 0 when none. */
export interface TransactionAges {
  inUse: number;
  waiting: number;
}

export interface WatchedDatabase {
  readonly db: Database;
  ages(): TransactionAges;
}

/**
 * The pool's own figures are counts only, and a count cannot tell a busy slot from one that never
 * comes back; an age can. A retried attempt counts from its own start.
 */
export function watchTransactions(db: Database, now: () => number = () => performance.now()): WatchedDatabase {
  const open = new Set<{ asked: number; began?: number }>();
  const tx: Database["tx"] = async (fn, opts) => {
    const entry: { asked: number; began?: number } = { asked: now() };
    open.add(entry);
    try {
      return await db.tx((t) => {
        entry.began = now();
        return fn(t);
      }, opts);
    } finally {
      open.delete(entry);
    }
  };
  return {
    db: { ...db, tx },
    ages() {
      const at = now();
      let inUse = 0;
      let waiting = 0;
      for (const e of open) {
        if (e.began === undefined) waiting = Math.max(waiting, at - e.asked);
        else inUse = Math.max(inUse, at - e.began);
      }
      return { inUse: inUse / 1000, waiting: waiting / 1000 };
    },
  };
}
