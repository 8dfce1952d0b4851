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
