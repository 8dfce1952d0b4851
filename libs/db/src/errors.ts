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

/** True when `e` is a unique violation of the named constraint (never by parsing message text). */
export function isUniqueViolation(e: unknown, constraint?: string): boolean {
  return isPgError(e) && e.code === PG.uniqueViolation && (constraint === undefined || e.constraint_name === constraint);
}

/**
 * Maps a Postgres error to an AppError through a table of constraint names a repository knows.
 * Anything unmapped is rethrown untouched and becomes a 500 at the edge.
 */
export function mapPgError(e: unknown, byConstraint: Record<string, () => AppError>): never {
  if (isPgError(e) && e.constraint_name) {
    const make = byConstraint[e.constraint_name];
    if (make) throw make();
  }
  throw e;
}

/**
 * A safety net under the contracts: a Postgres data exception (SQLSTATE class 22: a NUL byte in
 * text, a date or number out of range, text too long) means a value the caller sent reached the
 * database unrefused. That is a gap in a contract (log it and close it there), but the caller
 * still deserves the truth, a 400, rather than a 500 for our bug. Other errors: undefined.
 */
export function dataExceptionAsAppError(e: unknown): AppError | undefined {
  if (!isPgError(e) || !e.code.startsWith("22")) return undefined;
  return new AppError("validation_failed", "A value in the request cannot be stored (it is out of range or contains characters that are not allowed).", {
    cause: e,
    errors: [{ pointer: "/", message: "contains a value that cannot be stored" }],
  });
}
