import { afterAll, describe, expect, inject, it } from "vitest";
import { createDb, dataExceptionAsAppError } from "../src/index.js";

const stack = inject("stack");
const db = createDb({ url: stack.databaseUrl, schema: "public", max: 1, txMax: 1 });
afterAll(() => db.end({ timeout: 1 }));

const failureOf = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  );

describe("dataExceptionAsAppError", () => {
  it("when Postgres refuses a value (NUL in text, a date out of range, a number too big), then it is a 400 validation_failed", async () => {
    const failures = await Promise.all([
      failureOf(db.sql`select ${"a\u0000b"}::text`),
      failureOf(db.sql`select ${"50000-01-01"}::date`),
      failureOf(db.sql`select ${"99999999999"}::int`),
    ]);
    for (const e of failures) {
      const mapped = dataExceptionAsAppError(e);
      expect(mapped?.code, String(e)).toBe("validation_failed");
      expect(mapped?.status).toBe(400);
    }
  });

  it("when the error is not a data exception, then it is left alone (a 500 stays a 500)", async () => {
    const e = await failureOf(db.sql`select * from no_such_table`);
    expect(e).toBeDefined();
    expect(dataExceptionAsAppError(e)).toBeUndefined();
    expect(dataExceptionAsAppError(new Error("boom"))).toBeUndefined();
  });
});
