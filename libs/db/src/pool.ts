import { randomBytes } from "node:crypto";
import { StartupError } from "@tasksvc/config";
import { sampled } from "@tasksvc/telemetry";
import net from "node:net";
import { userInfo } from "node:os";
import postgres from "postgres";
import { transactionPool, type TxOptions } from "./transactions.js";

/**
 * What repositories query with: the statements both the autocommit pool and a transaction offer,
 * so one repository factory serves `db.sql` and the handle `db.tx` lends, without a cast.
 */
export type Sql = postgres.ISql;
/** The autocommit pool itself: also `end()`, and the `begin()`/`reserve()` that throw here. */
export type PoolSql = postgres.Sql;
export type TxSql = postgres.TransactionSql;

export class DatabaseUnreachableError extends StartupError {
  constructor(url: string, cause: unknown) {
    super(`cannot reach Postgres at DATABASE_URL=${redactUrl(url)} (${describe(cause)}): start Postgres or set DATABASE_URL`);
  }
}

function describe(e: unknown): string {
  if (e && typeof e === "object") {
    const o = e as { code?: string; message?: string };
    return [o.code, o.message].filter(Boolean).join(" ") || String(e);
  }
  return String(e);
}

export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return "(unparseable URL)";
  }
}

/**
 * Like libpq, a URL without a user name connects as the operating-system user (postgres.js would
 * otherwise send none when USER is unset, as under some process managers and CI runners).
 */
export function withDefaultUser(url: string): string {
  const u = new URL(url);
  if (u.username || process.env["PGUSER"]) return url;
  u.username = userInfo().username;
  return u.toString();
}

/**
 * Connection options every pool uses. `max_pipeline: 1`: when every connection is busy,
 * postgres.js (3.4.x) pipelines further queries onto busy connections and keeps them in an array
 * queue whose shift() leaves holes and whose remove() scans it, so under sustained load each query
 * costs more than the last (measured here: 38k → 11k queries/s within 12 s on 4 connections; the
 * same symptom as porsager/postgres#747). Without pipelining, waiting queries sit in a queue that
 * empties whenever load dips, and throughput is flat (52-58k queries/s on the same test).
 */
export const POOL_OPTIONS = {
  idle_timeout: 30,
  connect_timeout: 5,
  max_pipeline: 1,
  // Seconds before the n-th reconnect after a failed one. The driver's default grows to 20 s
  // ((0.5..1) × min(3^n / 100, 20)), so after a 5 s database outage writes waited 4-6 s more; this
  // caps it at 0.5 s (measured recovery after a Postgres crash: 0.07-0.17 s, test/fault/restart).
  backoff: (n: number) => Math.min(0.05 * 2 ** n, 0.5),
};

export interface DbOptions {
  url: string;
  /** The schema this service owns; it is the connection's search_path, so SQL names tables bare. */
  schema: string;
  /** Connections in all (default 10): the autocommit pool gets `max - txMax`. */
  max?: number;
  /** Of those, connections for transactions, each lent to one at a time (default: a third, at least 1). */
  txMax?: number;
  /**
   * `session` (default): `url` reaches Postgres, or a pooler in session mode. `transaction`: a
   * pooler in transaction mode (PgBouncer), where consecutive statements may reach different
   * server connections: no prepared statements, and no session settings sent at connect (the
   * schema's search_path must come from the server side: see checkDb).
   */
  poolMode?: "session" | "transaction";
  /**
   * The server-side time limit of every statement (statement_timeout, set at connect). Behind a
   * pooler in transaction mode no session setting can be sent: the role or the pooler's
   * connect_query must set it there (docs/operations.md).
   */
  statementTimeoutMs?: number;
}

/**
 * One service's database: `sql` for autocommit statements, `tx()` for transactions.
 *
 * Why two kinds of connection. postgres.js 3.4.9 (the newest release) can send a transaction's
 * BEGIN on a connection it never reserves for that transaction (porsager/postgres#1189, #823,
 * open PRs #1207/#1218): when BEGIN fills a connection's pipeline (always, with max_pipeline 1),
 * when the pool hands a queued BEGIN to a connection right behind another one, or when a socket
 * `drain` returns a transaction's connection to the pool. The pool then runs other callers'
 * autocommit statements inside that open transaction, and its ROLLBACK silently discards writes
 * that were already acknowledged (issue 9: 3,541 of 10,536 inserts lost in 3 s on a pool of 4).
 * So no transaction ever runs on the shared pool: the autocommit pool refuses begin() and
 * reserve(), and each transaction gets a connection of its own from `tx()`: a set of one-
 * connection postgres.js instances, each lent to exactly one transaction at a time by our own
 * queue, which sends BEGIN/COMMIT/ROLLBACK itself (transactions.ts), so the driver's reservation
 * paths above are never reached, whatever max_pipeline is.
 */
export interface Database {
  /** Autocommit statements only; `sql.begin()` and `sql.reserve()` throw (use `tx`). */
  readonly sql: PoolSql;
  /** Runs `fn` in one transaction on a connection lent to it alone; retries deadlocks. */
  tx<T>(fn: (t: TxSql) => Promise<T>, opts?: TxOptions): Promise<T>;
  /** Closes every connection (waits up to `timeout` seconds for queries in flight). */
  end(opts?: { timeout?: number }): Promise<void>;
  /** Connections in all (both kinds): what a fair share of them is reckoned from. */
  readonly connections: number;
}

/**
 * The end of the autocommit connections' application_name (`tasksvc-<schema>-<instance>-read`):
 * they never hold a transaction, so a reader of pg_stat_activity (the sync horizon) can tell a
 * long read from a write still to commit.
 */
export const READ_SUFFIX = "-read";

function connectionOptions(opts: DbOptions, instance: string) {
  // TimeZone UTC: a server set to another zone returns old timestamps with offsets such as
  // +00:53:28 that JavaScript cannot parse (a 500 on reading them).
  const tracked = { application_name: `tasksvc-${opts.schema}-${instance}`, TimeZone: "UTC" };
  const limit = opts.statementTimeoutMs === undefined ? {} : { statement_timeout: opts.statementTimeoutMs };
  if (opts.poolMode === "transaction") {
    // PgBouncer refuses a startup parameter it does not track (application_name and TimeZone
    // it does), and a named prepared statement would be looked for on another server connection.
    return { ...POOL_OPTIONS, onnotice: () => {}, prepare: false, connection: tracked };
  }
  return { ...POOL_OPTIONS, onnotice: () => {}, connection: { search_path: opts.schema, ...limit, ...tracked } };
}

/** The length of the protocol's CancelRequest; a StartupMessage is always longer. */
const CANCEL_REQUEST_BYTES = 16;

type SocketFactory = (o: { host: string[]; port: number[]; path?: string | false }) => net.Socket;

/**
 * Opens one connection's socket (postgres.js's `socket` option, for both kinds of connection).
 * The first host of the URL is used.
 *
 * A server that closes a connection it accepted says why first (an ErrorResponse: starting up,
 * shutting down, too many connections). A socket closed before a single byte came back is an
 * address with no database behind it (a proxy or virtual IP during a failover): it fails here as
 * a reset. Closed cleanly instead, it sent postgres.js 3.4.9 into reconnecting for the statement
 * it was opened for, again and again with no deadline (the connect timeout restarts with each
 * attempt), so that statement, and every one queued behind it, waited as long as the outage.
 */
function openSocket(o: Parameters<SocketFactory>[0]): net.Socket {
  const socket = new net.Socket();
  const host = o.host[0] ?? "localhost";
  const port = o.port[0] ?? 5432;
  socket.once("end", () => {
    // A cancel request (16 bytes) is the one message the server answers by closing in silence.
    if (socket.bytesRead === 0 && socket.bytesWritten !== CANCEL_REQUEST_BYTES)
      socket.destroy(Object.assign(new Error(`the database endpoint ${host}:${port} closed the connection before answering`), { code: "ECONNRESET" }));
  });
  if (o.path) socket.connect(o.path);
  else socket.connect(port, host);
  // The driver reads these for TLS's server name and its error messages.
  return Object.assign(socket, { host, port });
}

/**
 * A socket factory that lets a driver instance open one connection in its life. Asked again,
 * when the driver reconnects after losing it, it fails: a statement the driver still held for
 * the lost transaction is then rejected instead of being sent on a new connection outside that
 * transaction. Nothing session-side is needed for this, so it holds behind a pooler in
 * transaction mode too.
 */
function oneConnection(onrefused: () => void): SocketFactory {
  let used = false;
  return (o) => {
    if (used) {
      // The driver calls no onclose for a connection it could not reopen: report it as one, or
      // the instance would look usable while every later statement waits on it for ever.
      onrefused();
      throw Object.assign(new Error("the transaction's connection closed (a transaction connection never reconnects)"), { code: "CONNECTION_CLOSED" });
    }
    used = true;
    return openSocket(o);
  };
}

/**
 * The longest a transaction waits for a free slot: the statement time limit, or the connect
 * timeout without one. The limit is kept below the RPC timeout (docs/operations.md), so a caller
 * still waiting past it has been or is about to be told 503 by the gateway: a transaction started
 * later would write for nobody. And a slot held that long is on a slow or lost database, where
 * queuing more only lengthens the outage's tail.
 */
export function slotWaitMs(opts: Pick<DbOptions, "statementTimeoutMs">): number {
  return opts.statementTimeoutMs ?? POOL_OPTIONS.connect_timeout * 1000;
}

/** A postgres.js pool bound to one schema. Timestamps come back as Date; numerics as strings. */
export function createDb(opts: DbOptions): Database {
  const url = withDefaultUser(opts.url);
  // application_name tasksvc-<schema>-<instance>: the service in pg_stat_activity, and this pool's
  // own connections for the tasksvc_db_connections metric (a pid would repeat across containers).
  const instance = randomBytes(4).toString("hex");
  // One budget per process, so that splitting it changes no deployment's connection count.
  const max = Math.max(2, opts.max ?? 10);
  const txMax = Math.min(max - 1, Math.max(1, opts.txMax ?? Math.floor(max / 3)));
  const autocommit = connectionOptions(opts, instance);
  // A connection is refused as it opens (a connection error: 503, and the next statement opens
  // another through the URL) when it reaches a node that cannot take the service's writes:
  // after a failover or a switchover the URL may lead to a standby, or to a server whose
  // sessions are read-only. The driver checks one condition per pool: a slot's own sessions are
  // read-only on purpose, so its test is `primary`; the autocommit pool's is `read-write` (on
  // Postgres 15 a standby reports default_transaction_read_only off: its writes fail with 25006,
  // a 503, and the transactions, refused there, fail as 503 too). Behind a pooler in transaction
  // mode a connection's session proves nothing about the next statement's, so no test there.
  const sessionMode = opts.poolMode !== "transaction";
  // `socket` is a documented option that postgres.js's types leave out.
  const sql = postgres(
    url,
    Object.assign(
      {
        ...autocommit,
        connection: { ...autocommit.connection, application_name: `${autocommit.connection.application_name}${READ_SUFFIX}` },
        max: max - txMax,
      },
      sessionMode ? { target_session_attrs: "read-write" as const } : {},
      { socket: openSocket },
    ),
  );
  const refuse = () => {
    throw new Error("transactions never run on the autocommit pool (postgres.js can leak them to other callers): use db.tx()");
  };
  Object.assign(sql, { begin: refuse, reserve: refuse });

  // max_pipeline back to the driver's default: only the transaction's own statements queue on a
  // slot; lifetime recycling off, since it would end a connection in the middle of a transaction.
  //
  // A slot's connections are read-only unless inside our BEGIN READ WRITE (transactions.ts): when
  // a slot's connection is lost while a statement of the transaction still waits to be sent, the
  // driver reconnects and sends that statement on the new connection, outside the transaction;
  // there the server refuses a write (25006) instead of committing it on its own.
  //
  // And each slot's driver instance opens one connection only (oneConnection): a lost one gets a
  // new instance (transactions.ts), so a statement held for the lost transaction is never re-sent.
  // Behind a pooler in transaction mode (no session settings) that is the guard that remains.
  const transactions = transactionPool(
    txMax,
    (onclose) => {
      const base = connectionOptions(opts, instance);
      const slotOptions = {
        ...base,
        connection: opts.poolMode === "transaction" ? base.connection : { ...base.connection, default_transaction_read_only: true },
        max: 1,
        max_pipeline: 100,
        max_lifetime: null,
        onclose,
        ...(sessionMode ? { target_session_attrs: "primary" as const } : {}),
      };
      // `socket` is a documented option that postgres.js's types leave out.
      return postgres(url, Object.assign(slotOptions, { socket: oneConnection(onclose) }));
    },
    { spanAttributes: { "db.namespace": opts.schema }, waitMs: slotWaitMs(opts) },
  );

  const unregister = [
    sampled.dbTransactionSlots(() => {
      const s = transactions.stats();
      return [
        { labels: { state: "in_use" }, value: s.inUse },
        { labels: { state: "waiting" }, value: s.waiting },
        { labels: { state: "max" }, value: s.size },
      ];
    }),
    sampled.dbConnections(async () => {
      const rows = await sql<Array<{ state: string | null; n: number }>>`
        select coalesce(state, 'unknown') as state, count(*)::int as n from pg_stat_activity
        where application_name in (${`tasksvc-${opts.schema}-${instance}`}, ${`tasksvc-${opts.schema}-${instance}${READ_SUFFIX}`}) group by 1`;
      return rows.map((r) => ({ labels: { state: r.state ?? "unknown" }, value: r.n }));
    }),
  ];

  return {
    sql,
    tx: transactions.tx,
    connections: max,
    async end(endOpts = {}) {
      for (const u of unregister) u();
      await Promise.all([sql.end(endOpts), transactions.end(endOpts)]);
    },
  };
}

/**
 * Fails fast with the setting to fix when Postgres is not there, or when the connections do not
 * resolve bare names in the service's schema (behind a pooler in transaction mode the
 * search_path comes from the server side, and a missing one would fail every statement).
 */
export async function checkDb(db: Database, url: string, schema?: string): Promise<void> {
  let seen: Array<string | null>;
  try {
    const [a] = await db.sql<{ s: string | null }[]>`select current_schema() as s`;
    const b = await db.tx(async (t) => (await t<{ s: string | null }[]>`select current_schema() as s`)[0]);
    seen = [a?.s ?? null, b?.s ?? null];
  } catch (e) {
    throw new DatabaseUnreachableError(url, e);
  }
  if (schema !== undefined && seen.some((s) => s !== schema))
    throw new StartupError(
      `connections through DATABASE_URL=${redactUrl(url)} resolve names in schema ${seen.find((s) => s !== schema) ?? "(none)"}, not ${schema}: ` +
        `behind a pooler in transaction mode, give them search_path ${schema} on the server side ` +
        `(ALTER ROLE <the service's user> SET search_path = ${schema}, or the pooler's connect_query for this database entry)`,
    );
}

/**
 * Creates the database named in the URL when it does not exist yet, through the `postgres`
 * maintenance database. Safe when several services start at once (duplicate_database is fine).
 */
export async function ensureDatabase(url: string): Promise<void> {
  const u = new URL(withDefaultUser(url));
  const name = decodeURIComponent(u.pathname.replace(/^\//, "")) || "postgres";
  u.pathname = "/postgres";
  const admin = postgres(u.toString(), { max: 1, connect_timeout: 5, onnotice: () => {} });
  try {
    const rows = await admin`select 1 from pg_database where datname = ${name}`;
    if (rows.length === 0) {
      await admin.unsafe(`create database ${quoteIdent(name)}`).catch((e: { code?: string }) => {
        if (e.code !== "42P04" && e.code !== "23505") throw e;
      });
    }
  } catch (e) {
    if ((e as { code?: string }).code?.startsWith("42")) throw e;
    throw new DatabaseUnreachableError(url, e);
  } finally {
    await admin.end({ timeout: 1 });
  }
}

export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
