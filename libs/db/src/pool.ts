import { StartupError } from "@tasksvc/config";
import { userInfo } from "node:os";
import postgres from "postgres";

export type Sql = postgres.Sql;
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

export interface DbOptions {
  url: string;
  /** The schema this service owns; it is the connection's search_path, so SQL names tables bare. */
  schema: string;
  max?: number;
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
export const POOL_OPTIONS = { idle_timeout: 30, connect_timeout: 5, max_pipeline: 1 } as const;

/** A postgres.js pool bound to one schema. Timestamps come back as Date; numerics as strings. */
export function createDb(opts: DbOptions): Sql {
  return postgres(withDefaultUser(opts.url), {
    ...POOL_OPTIONS,
    max: opts.max ?? 10,
    onnotice: () => {},
    connection: { search_path: opts.schema, application_name: `tasksvc-${opts.schema}` },
  });
}

/** Fails fast with the setting to fix when Postgres is not there. */
export async function checkDb(sql: Sql, url: string): Promise<void> {
  try {
    await sql`select 1`;
  } catch (e) {
    throw new DatabaseUnreachableError(url, e);
  }
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
