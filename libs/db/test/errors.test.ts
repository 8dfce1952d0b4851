import { afterAll, describe, expect, inject, it } from "vitest";
import { eventually } from "@tasksvc/testing";
import { createDb, databaseErrorAsAppError, mapPgError, PG, type PgErrorRule } from "../src/index.js";

const stack = inject("stack");
const db = createDb({ url: stack.databaseUrl, schema: "public", max: 1, txMax: 1 });
afterAll(() => db.end({ timeout: 1 }));

const failureOf = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  );

describe("databaseErrorAsAppError", () => {
  it("when Postgres refuses a value (NUL in text, a date out of range, a number too big), then it is a 400 validation_failed", async () => {
    const failures = await Promise.all([
      failureOf(db.sql`select ${"a\u0000b"}::text`),
      failureOf(db.sql`select ${"50000-01-01"}::date`),
      failureOf(db.sql`select ${"99999999999"}::int`),
    ]);
    for (const e of failures) {
      const mapped = databaseErrorAsAppError(e);
      expect(mapped?.code, String(e)).toBe("validation_failed");
      expect(mapped?.status).toBe(400);
    }
  });

  it("when the error is not a data exception, then it is left alone (a 500 stays a 500)", async () => {
    const e = await failureOf(db.sql`select * from no_such_table`);
    expect(e).toBeDefined();
    expect(databaseErrorAsAppError(e)).toBeUndefined();
    expect(databaseErrorAsAppError(new Error("boom"))).toBeUndefined();
  });
});

describe("databaseErrorAsAppError for an unreachable database", () => {
  it("when the database cannot be reached, then it is a 503 with Retry-After", async () => {
    const gone = createDb({ url: "postgres://127.0.0.1:1/nothing", schema: "public", max: 1, txMax: 1 });
    try {
      const e = await failureOf(gone.sql`select 1`);
      const mapped = databaseErrorAsAppError(e);
      expect(mapped?.code, String(e)).toBe("service_unavailable");
      expect(mapped?.retryAfter).toBe(1);
    } finally {
      await gone.end({ timeout: 1 });
    }
  });

  it("when a session is terminated by the server, then it is a 503", async () => {
    const [{ pid }] = await db.sql<{ pid: number }[]>`select pg_backend_pid() as pid`;
    const killer = createDb({ url: stack.databaseUrl, schema: "public", max: 1, txMax: 1 });
    try {
      const inFlight = failureOf(db.sql`select pg_sleep(5)`);
      // Terminate once the sleep is running.
      await eventually(
        async () => (await killer.sql`select pg_terminate_backend(pid) from pg_stat_activity where pid = ${pid} and state = 'active'`).length > 0,
        { intervalMs: 20, what: "the sleeping session to show up (and be terminated)" },
      );
      const mapped = databaseErrorAsAppError(await inFlight);
      expect(mapped?.code).toBe("service_unavailable");
    } finally {
      await killer.end({ timeout: 1 });
    }
  });
});

describe("mapPgError", () => {
  class NameTaken extends Error {}
  const rules: readonly PgErrorRule[] = [
    { code: PG.uniqueViolation, constraint: "map_pg_error_name_key", to: () => new NameTaken() },
    // The same constraint under another SQLSTATE must not match.
    { code: PG.foreignKeyViolation, constraint: "map_pg_error_pkey", to: () => new Error("wrong rule") },
  ];
  it("when a statement violates a constraint a rule names with that SQLSTATE, then the rule's error is thrown, else the Postgres error as it was", async () => {
    // An autocommit pool of one connection of its own: the temporary table lives in its session.
    const own = createDb({ url: stack.databaseUrl, schema: "public", max: 2, txMax: 1 });
    const insert = (id: number, name: string) =>
      own.sql`insert into pg_temp.map_pg_error (id, name) values (${id}, ${name})`.catch((e: unknown) => mapPgError(e, rules));
    try {
      await own.sql`create temporary table map_pg_error (id int constraint map_pg_error_pkey primary key, name text constraint map_pg_error_name_key unique)`;
      await insert(1, "a");
      await expect(insert(2, "a")).rejects.toBeInstanceOf(NameTaken);
      const other = (await failureOf(insert(1, "b"))) as { code?: string; constraint_name?: string } | undefined;
      expect(other).not.toBeInstanceOf(NameTaken);
      expect([other?.code, other?.constraint_name]).toEqual([PG.uniqueViolation, "map_pg_error_pkey"]);
      const plain = new Error("not from Postgres");
      expect(() => mapPgError(plain, rules)).toThrow(plain);
    } finally {
      await own.end({ timeout: 1 });
    }
  });
});
