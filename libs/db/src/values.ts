import type postgres from "postgres";
import type { Sql } from "./pool.js";

/**
 * `T` where JSON.stringify writes it as itself. Unlike the driver's JSONValue it takes interfaces
 * (no index signature) and `unknown` (an idempotency record holds JSON already).
 */
export type Json<T> = unknown extends T
  ? T
  : T extends string | number | boolean | null | undefined | { toJSON(): unknown }
    ? T
    : T extends bigint | symbol | ((...args: never[]) => unknown)
      ? never
      : { [K in keyof T]: Json<T[K]> };

/** Typed to take the app's JSON values without a cast at the call. */
export function jsonb<T>(sql: Sql, value: T & Json<T>): postgres.Parameter {
  return sql.json(value as postgres.JSONValue);
}

/** The driver only reads it. */
export function array<T extends postgres.SerializableParameter>(sql: Sql, values: readonly T[]): postgres.ArrayParameter<T[]> {
  return sql.array(values as T[]);
}

export type Fragment = postgres.PendingQuery<postgres.Row[]>;
