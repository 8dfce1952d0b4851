import { AppError } from "@tasksvc/errors";

export interface PgErrorLike {
  code: string;
  constraint_name?: string;
}

export function isPgError(e: unknown): e is PgErrorLike {
  return typeof e === "object" && e !== null && typeof (e as { code?: unknown }).code === "string" && (e as { code: string }).code.length === 5;
}

export const PG = {
  uniqueViolation: "23505",
  foreignKeyViolation: "23503",
  checkViolation: "23514",
  serializationFailure: "40001",
  deadlockDetected: "40P01",
} as const;
export type PgCode = (typeof PG)[keyof typeof PG];

/** One translation a repository knows: this SQLSTATE on this constraint means `to()`. */
export interface PgErrorRule {
  code: PgCode;
  constraint: string;
  to: () => Error;
}

/**
 * Rethrows a Postgres error as what it means to the repository's caller, by SQLSTATE and
 * constraint name (never by message text): repositories own this translation, so domain code
 * sees a typed error of the repository or of this library (KeyRecordedMeanwhile), never a
 * Postgres code. Anything no rule matches is rethrown untouched and becomes a 500 at the edge
 * (unless databaseErrorAsAppError knows it). A repository calls it from its query's catch.
 */
export function mapPgError(e: unknown, rules: readonly PgErrorRule[]): never {
  if (isPgError(e)) {
    const rule = rules.find((r) => r.code === e.code && r.constraint === e.constraint_name);
    if (rule) throw rule.to();
  }
  throw e;
}

/** Driver and socket codes of a connection that failed or went away (postgres.js, node:net). */
const CONNECTION_CODES = new Set([
  // Ours: no transaction slot came free within its deadline (transactions.ts).
  "SLOT_WAIT_TIMEOUT",
  "CONNECTION_CLOSED",
  "CONNECTION_DESTROYED",
  "CONNECTION_ENDED",
  "CONNECT_TIMEOUT",
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
]);

/**
 * The database cannot be reached, went away, or is restarting: a driver or socket failure,
 * SQLSTATE class 08, 57P01-57P03 (shutdown, crash, starting up) or 53300 (too many connections).
 */
export function isConnectionError(e: unknown): boolean {
  const code = typeof e === "object" && e !== null ? (e as { code?: unknown }).code : undefined;
  if (typeof code !== "string") return false;
  return CONNECTION_CODES.has(code) || code.startsWith("08") || code === "57P01" || code === "57P02" || code === "57P03" || code === "53300";
}

/** SQLSTATE read_only_sql_transaction: a write on a session that refuses writes. */
export const READ_ONLY_SQL_TRANSACTION = "25006";
/** SQLSTATE feature_not_supported: what a standby answers to BEGIN READ WRITE. */
export const FEATURE_NOT_SUPPORTED = "0A000";

/**
 * The database answered as a standby, or its sessions refuse writes: after a failover or a
 * switchover the URL reaches a node that is no longer the primary. Thrown by `tx()` when its
 * BEGIN READ WRITE is refused; the slot's connection is dropped, so the next transaction
 * connects through the URL again (which by then may reach the new primary).
 */
export class DatabaseReadOnly extends Error {
  readonly code = "DATABASE_READ_ONLY";
  constructor(cause: unknown) {
    super("the database refuses writes (a standby, or sessions read-only): the URL does not reach a primary", { cause });
  }
}

/**
 * A write refused because the session is read-only (25006) or a transaction refused as on a
 * standby (DatabaseReadOnly): the database is there, but not as a primary, for now.
 */
export function isReadOnlyError(e: unknown): boolean {
  const code = typeof e === "object" && e !== null ? (e as { code?: unknown }).code : undefined;
  return code === READ_ONLY_SQL_TRANSACTION || code === "DATABASE_READ_ONLY";
}

/**
 * The database errors that are not the service's bug, as the AppError a caller should see;
 * undefined for everything else (a real 500).
 *
 * - Data exceptions (SQLSTATE class 22: a NUL byte in text, a date or number out of range, text
 *   too long): a value the caller sent reached the database unrefused. That is a gap in a
 *   contract (logged, to be closed there), but the caller deserves the truth, a 400.
 * - The database unreachable or restarting (class 08, 57P01-57P03, 53300 too many connections,
 *   a dropped socket, no transaction slot within its deadline) or no longer the primary (25006,
 *   a standby's refusal of BEGIN READ WRITE): 503 with Retry-After. The outcome of a write caught by this is unknown
 *   to us too; a retry with the same Idempotency-Key is answered from the write's own record if
 *   it committed, so retrying is always safe.
 */
export function databaseErrorAsAppError(e: unknown): AppError | undefined {
  // A node that is no longer the primary (a failover, a switchover): unavailable for a moment too.
  if (isConnectionError(e) || isReadOnlyError(e)) {
    return new AppError("service_unavailable", "The database is unavailable for a moment; retry shortly (with the same Idempotency-Key for a write).", {
      cause: e,
      retryAfter: 1,
    });
  }
  // A statement stopped at the time limit outside a scan's own handling (which answers 400
  // query_too_expensive): the database is too slow right now, not the request wrong.
  if (isPgError(e) && e.code === "57014") {
    return new AppError(
      "service_unavailable",
      "The database did not answer within the time limit; retry shortly (with the same Idempotency-Key for a write).",
      {
        cause: e,
        retryAfter: 1,
      },
    );
  }
  if (isPgError(e) && e.code.startsWith("22")) {
    return new AppError("validation_failed", "A value in the request cannot be stored (it is out of range or contains characters that are not allowed).", {
      cause: e,
      errors: [{ pointer: "/", message: "contains a value that cannot be stored" }],
    });
  }
  return undefined;
}
