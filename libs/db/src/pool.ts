import { randomBytes } from "node:crypto";
import { StartupError } from "@tasksvc/config";
import { sampled } from "@tasksvc/telemetry";
import net from "node:net";
import { userInfo } from "node:os";
import postgres from "postgres";
import { transactionPool, type TxOptions } from "./transactions.js";

export type Sql = postgres.ISql;
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

/** Like libpq: postgres.js would send no user name when USER is unset (some process managers, CI). */
export function withDefaultUser(url: string): string {
  const u = new URL(url);
  if (u.username || process.env["PGUSER"]) return url;
  u.username = userInfo().username;
  return u.toString();
}

/** `max_pipeline: 1`: postgres.js 3.4.x queues pipelined queries so each costs more than the last under load; unpipelined is flat (decision 0008). */
export const POOL_OPTIONS = {
  idle_timeout: 30,
  connect_timeout: 5,
  max_pipeline: 1,
  // The driver's reconnect backoff grows to 20 s; capped so writes resume soon after an outage (decision 0011).
  backoff: (n: number) => Math.min(0.05 * 2 ** n, 0.5),
};

export interface DbOptions {
  url: string;
  schema: string;
  max?: number;
  txMax?: number;
  /** Connections for long read-only snapshots (exports), taken from the autocommit share of `max` (default 0: none). */
  snapshots?: number;
  /** PgBouncer in transaction mode: no prepared statements, no session settings (decision 0030). */
  poolMode?: "session" | "transaction";
  statementTimeoutMs?: number;
}

/**
 * Transactions each on a connection of their own: postgres.js 3.4.9 can run other callers' statements inside a transaction on the
 * shared pool, whose ROLLBACK then discards acknowledged writes (decision 0011).
 */
export interface Database {
  /** Autocommit only; `sql.begin()` and `sql.reserve()` throw. */
  readonly sql: PoolSql;
  tx<T>(fn: (t: TxSql) => Promise<T>, opts?: TxOptions): Promise<T>;
  /**
   * One `repeatable read, read only` transaction on a connection of its own, for reads that must see
   * one moment for minutes (an export): it never holds a write slot, and its connection's name ends
   * in READ_SUFFIX, so the sync horizon does not wait for it. Each statement keeps the statement timeout.
   */
  snapshot<T>(fn: (t: TxSql) => Promise<T>): Promise<T>;
  /** How many snapshots may be open at once. */
  readonly snapshotConnections: number;
  end(opts?: { timeout?: number }): Promise<void>;
  readonly connections: number;
}

/** Autocommit connections never hold a transaction, so the sync horizon can tell a long read from a pending write. */
export const READ_SUFFIX = "-read";

function connectionOptions(opts: DbOptions, instance: string) {
  // A server in another zone returns old timestamps with offsets such as +00:53:28 that JavaScript cannot parse.
  const tracked = { application_name: `tasksvc-${opts.schema}-${instance}`, TimeZone: "UTC" };
  const limit = opts.statementTimeoutMs === undefined ? {} : { statement_timeout: opts.statementTimeoutMs };
  if (opts.poolMode === "transaction") {
    // PgBouncer refuses startup parameters it does not track, and a prepared statement may be looked for on another server connection.
    return { ...POOL_OPTIONS, onnotice: () => {}, prepare: false, connection: tracked };
  }
  return { ...POOL_OPTIONS, onnotice: () => {}, connection: { search_path: opts.schema, ...limit, ...tracked } };
}

const CANCEL_REQUEST_BYTES = 16;

type SocketFactory = (o: { host: string[]; port: number[]; path?: string | false }) => net.Socket;

/** A clean close before any byte came back (a proxy during a failover) sent postgres.js reconnecting with no deadline: fail it as a reset (decision 0032). */
function openSocket(o: Parameters<SocketFactory>[0]): net.Socket {
  const socket = new net.Socket();
  const host = o.host[0] ?? "localhost";
  const port = o.port[0] ?? 5432;
  socket.once("end", () => {
    // A cancel request is the one message the server answers by closing in silence.
    if (socket.bytesRead === 0 && socket.bytesWritten !== CANCEL_REQUEST_BYTES)
      socket.destroy(Object.assign(new Error(`the database endpoint ${host}:${port} closed the connection before answering`), { code: "ECONNRESET" }));
  });
  if (o.path) socket.connect(o.path);
  else socket.connect(port, host);
  return Object.assign(socket, { host, port });
}

/** One connection per driver instance: a reconnect fails, so a statement held for a lost transaction is rejected rather than sent outside it. */
function oneConnection(onrefused: () => void): SocketFactory {
  let used = false;
  return (o) => {
    if (used) {
      // The driver calls no onclose for a connection it could not reopen; without this the slot would look usable for ever.
      onrefused();
      throw Object.assign(new Error("the transaction's connection closed (a transaction connection never reconnects)"), { code: "CONNECTION_CLOSED" });
    }
    used = true;
    return openSocket(o);
  };
}

/** Below the RPC timeout: a caller still waiting past it has been told 503, so a transaction started later would write for nobody. */
export function slotWaitMs(opts: Pick<DbOptions, "statementTimeoutMs">): number {
  return opts.statementTimeoutMs ?? POOL_OPTIONS.connect_timeout * 1000;
}

export function createDb(opts: DbOptions): Database {
  const url = withDefaultUser(opts.url);
  // Per instance, for the tasksvc_db_connections metric (a pid would repeat across containers).
  const instance = randomBytes(4).toString("hex");
  // One budget per process, so that splitting it changes no deployment's connection count.
  const max = Math.max(2, opts.max ?? 10);
  const txMax = Math.min(max - 1, Math.max(1, opts.txMax ?? Math.floor(max / 3)));
  // One at least when asked for, else at most a third of what is left for autocommit reads, which every request needs.
  const asked = opts.snapshots ?? 0;
  const snapshotMax = asked <= 0 ? 0 : Math.min(max - txMax - 1, Math.max(1, Math.min(asked, Math.floor((max - txMax) / 3))));
  const autocommit = connectionOptions(opts, instance);
  // After a failover the URL may lead to a standby. Slots are read-only on purpose, so theirs test `primary` (decision 0032).
  const sessionMode = opts.poolMode !== "transaction";
  // `socket` is a documented option that postgres.js's types leave out.
  const sql = postgres(
    url,
    Object.assign(
      {
        ...autocommit,
        connection: { ...autocommit.connection, application_name: `${autocommit.connection.application_name}${READ_SUFFIX}` },
        max: max - txMax - snapshotMax,
      },
      sessionMode ? { target_session_attrs: "read-write" as const } : {},
      { socket: openSocket },
    ),
  );
  const refuse = () => {
    throw new Error("transactions never run on the autocommit pool (postgres.js can leak them to other callers): use db.tx()");
  };
  Object.assign(sql, { begin: refuse, reserve: refuse });

  /**
   * One connection a slot, never recycled mid-transaction, read-only outside our BEGIN (a statement
   * re-sent after a reconnect cannot commit alone). `suffix` names the connection's role.
   */
  const slot = (suffix: string) => (onclose: () => void) => {
    const base = connectionOptions(opts, instance);
    const named = suffix === "" ? base.connection : { ...base.connection, application_name: `${base.connection.application_name}${suffix}` };
    const slotOptions = {
      ...base,
      connection: opts.poolMode === "transaction" ? named : { ...named, default_transaction_read_only: true },
      max: 1,
      max_pipeline: 100,
      max_lifetime: null,
      onclose,
      ...(sessionMode ? { target_session_attrs: "primary" as const } : {}),
    };
    return postgres(url, Object.assign(slotOptions, { socket: oneConnection(onclose) }));
  };
  const transactions = transactionPool(txMax, slot(""), { spanAttributes: { "db.namespace": opts.schema }, waitMs: slotWaitMs(opts) });

  // Read only from BEGIN: nothing in it can write, so a re-sent statement has nothing to commit alone.
  const snapshots =
    snapshotMax === 0
      ? undefined
      : transactionPool(snapshotMax, slot(`-snapshot${READ_SUFFIX}`), {
          spanAttributes: { "db.namespace": opts.schema, "db.operation.name": "snapshot" },
          waitMs: slotWaitMs(opts),
          begin: "begin isolation level repeatable read, read only",
          readOnly: true,
          measured: false,
        });

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
        where application_name in (${`tasksvc-${opts.schema}-${instance}`}, ${`tasksvc-${opts.schema}-${instance}${READ_SUFFIX}`},
          ${`tasksvc-${opts.schema}-${instance}-snapshot${READ_SUFFIX}`}) group by 1`;
      return rows.map((r) => ({ labels: { state: r.state ?? "unknown" }, value: r.n }));
    }),
  ];

  return {
    sql,
    tx: transactions.tx,
    snapshot: (fn) =>
      snapshots ? snapshots.tx(fn, { attempts: 1 }) : Promise.reject(new Error("this database pool has no snapshot connections (DbOptions.snapshots)")),
    connections: max,
    snapshotConnections: snapshotMax,
    async end(endOpts = {}) {
      for (const u of unregister) u();
      await Promise.all([sql.end(endOpts), transactions.end(endOpts), snapshots?.end(endOpts)]);
    },
  };
}

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
