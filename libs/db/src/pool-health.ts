import postgres from "postgres";
import { type Database, type Sql, withDefaultUser } from "./pool.js";

/** What a database connection answers as: a writable primary, a standby, or a primary whose sessions are read-only. */
export type DatabaseRole = "primary" | "standby" | "read_only";

/**
 * What the service's database is, asked on an autocommit connection (never a transaction slot's,
 * which are read-only outside BEGIN READ WRITE on purpose). A standby answers `select 1` like a
 * primary, so that is not enough: `pg_is_in_recovery()` names a standby, and
 * `transaction_read_only` a session that refuses writes all the same (default_transaction_read_only
 * on the database or role, or a server in read-only mode).
 */
export async function databaseRole(sql: Sql): Promise<DatabaseRole> {
  const [row] = await sql<Array<{ recovery: boolean; read_only: boolean }>>`
    select pg_is_in_recovery() as recovery, current_setting('transaction_read_only') = 'on' as read_only`;
  if (row === undefined) throw new Error("the database answered no row to its role query");
  return row.recovery ? "standby" : row.read_only ? "read_only" : "primary";
}

/**
 * Which database this is, beyond the URL that reaches it: the cluster's system identifier (made
 * once by initdb, the same on every physical copy, so a promoted standby is the same database)
 * and the database's name in that cluster.
 */
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

/**
 * What the node `url` leads to answers as, asked on a connection of its own that sets no session
 * condition: why the pool, whose connections may refuse a node that is not a primary as they
 * open, cannot connect. Opened and closed each time: asked only while the pool fails.
 */
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

/** Seconds the oldest transaction has held a slot (`inUse`) and waited for one (`waiting`); 0 when none. */
export interface TransactionAges {
  inUse: number;
  waiting: number;
}

export interface WatchedDatabase {
  /** The same database, its `tx` timed: hand this one to the service. */
  readonly db: Database;
  ages(): TransactionAges;
}

/**
 * Times every transaction of `db` from the outside: waiting from the call until the function runs
 * (its slot taken and BEGIN sent), in use from then until the call settles (COMMIT included). The
 * pool's own figures are counts only, and a count cannot tell a busy slot from one that never comes
 * back; an age can. A retried attempt counts from its own start.
 */
export function watchTransactions(db: Database, now: () => number = () => performance.now()): WatchedDatabase {
  // The transactions in flight: a handful at most (the slots and their queue), read at each probe.
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
