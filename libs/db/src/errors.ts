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

export interface PgErrorRule {
  code: PgCode;
  constraint: string;
  to: () => Error;
}

/**
 * By SQLSTATE and constraint name, never message text: repositories own this translation, so
 * domain code never sees a Postgres code. Anything no rule matches is rethrown untouched.
 */
export function mapPgError(e: unknown, rules: readonly PgErrorRule[]): never {
  if (isPgError(e)) {
    const rule = rules.find((r) => r.code === e.code && r.constraint === e.constraint_name);
    if (rule) throw rule.to();
  }
  throw e;
}

const CONNECTION_CODES = new Set([
  // Ours: no transaction slot came free within its deadline.
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

/** Class 08, 57P01-57P03 (shutdown, crash, starting up) or 53300 (too many connections). */
export function isConnectionError(e: unknown): boolean {
  const code = typeof e === "object" && e !== null ? (e as { code?: unknown }).code : undefined;
  if (typeof code !== "string") return false;
  return CONNECTION_CODES.has(code) || code.startsWith("08") || code === "57P01" || code === "57P02" || code === "57P03" || code === "53300";
}

export const READ_ONLY_SQL_TRANSACTION = "25006";
/** What a standby answers to BEGIN READ WRITE. */
export const FEATURE_NOT_SUPPORTED = "0A000";

/** After a failover the URL may reach a node that is no longer the primary. */
export class DatabaseReadOnly extends Error {
  readonly code = "DATABASE_READ_ONLY";
  constructor(cause: unknown) {
    super("the database refuses writes (a standby, or sessions read-only): the URL does not reach a primary", { cause });
  }
}

export function isReadOnlyError(e: unknown): boolean {
  const code = typeof e === "object" && e !== null ? (e as { code?: unknown }).code : undefined;
  return code === READ_ONLY_SQL_TRANSACTION || code === "DATABASE_READ_ONLY";
}

/**
 * Database errors that are not the service's bug. A data exception (class 22) is a value a
 * contract let through: logged to be closed there, but the caller deserves a 400. Unreachable or
 * no longer the primary is a 503: a retry with the same Idempotency-Key is always safe.
 */
export function databaseErrorAsAppError(e: unknown): AppError | undefined {
  if (isConnectionError(e) || isReadOnlyError(e)) {
    return new AppError("service_unavailable", "The database is unavailable for a moment; retry shortly (with the same Idempotency-Key for a write).", {
      cause: e,
      retryAfter: 1,
    });
  }
  // Outside a scan's own handling (400 query_too_expensive): the database is too slow now, not the request wrong.
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
