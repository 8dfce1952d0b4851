import type postgres from "postgres";
import type { Sql } from "./pool.js";

/**
 * `T` where JSON.stringify writes it as itself, checked through its structure: strings, numbers,
 * booleans, null, objects with toJSON (Date) and arrays and objects of those; a bigint, symbol or
 * function anywhere makes it `never`. Unlike the driver's own JSONValue it takes interfaces (they
 * have no index signature) and `unknown` (an idempotency record holds whatever its operation
 * answered, which is JSON already).
 */
export type Json<T> = unknown extends T
  ? T
  : T extends string | number | boolean | null | undefined | { toJSON(): unknown }
    ? T
    : T extends bigint | symbol | ((...args: never[]) => unknown)
      ? never
      : { [K in keyof T]: Json<T[K]> };

/** A jsonb parameter: `sql.json()` typed to take the app's JSON values without a cast at the call. */
export function jsonb<T>(sql: Sql, value: T & Json<T>): postgres.Parameter {
  // Json<T> checked what the driver's JSONValue would; it only stringifies the value.
  return sql.json(value as postgres.JSONValue);
}

/** An array parameter: `sql.array()` typed to take a readonly array (the driver only reads it). */
export function array<T extends postgres.SerializableParameter>(sql: Sql, values: readonly T[]): postgres.ArrayParameter<T[]> {
  return sql.array(values as T[]);
}

/** A piece of a statement (`sql\`…\``) that a repository composes into a larger one. */
export type Fragment = postgres.PendingQuery<postgres.Row[]>;
