import { afterAll, describe, expect, inject, it } from "vitest";
import { array, jsonb } from "../src/index.js";
import { recordingSql } from "./recorder.js";

// jsonb() and array() send what sql.json() and sql.array() sent (the repositories cast to call
// those); only their types differ.
const stack = inject("stack");

const { sql, sentBy } = recordingSql(stack.databaseUrl);
afterAll(() => sql.end({ timeout: 1 }));

/** An interface, as the app's row and message types are: the driver's JSONValue refuses it. */
interface Wake {
  org: string;
  number: number;
  wake: Date;
  note?: string | undefined;
  tags: readonly string[];
}

describe("jsonb", () => {
  it("when an interface's value is written, then the statement is sql.json()'s and the value reads back as JSON", async () => {
    const value: Wake[] = [{ org: "org_1", number: 7, wake: new Date("2024-05-01T10:00:00.000Z"), tags: ["a"] }];
    const before = await sentBy(sql`select ${sql.json(value as never)}::jsonb as v`);
    const q = sql<{ v: unknown }[]>`select ${jsonb(sql, value)}::jsonb as v`;
    expect(await sentBy(q)).toEqual(before);
    expect(before.types).toEqual([3802]);
    expect((await q)[0]?.v).toEqual([{ org: "org_1", number: 7, wake: "2024-05-01T10:00:00.000Z", tags: ["a"] }]);
  });

  it("when a value's type says nothing (unknown, object), then it is written as is", async () => {
    const recorded: unknown = { id: "k", n: 1 };
    const jwk: object = { kty: "OKP" };
    const [row] = await sql<{ a: unknown; b: unknown }[]>`select ${jsonb(sql, recorded)}::jsonb as a, ${jsonb(sql, jwk)}::jsonb as b`;
    expect(row).toEqual({ a: { id: "k", n: 1 }, b: { kty: "OKP" } });
  });
});

// Compile-time checks, run by the type check of the tests (`tsc -p tsconfig.test.json`, part of
// `make test`): a value JSON cannot write as itself does not compile. Never called.
export function refusedValues(): void {
  // @ts-expect-error a bigint has no JSON form
  jsonb(sql, { n: 1n });
  // @ts-expect-error a function is dropped by JSON.stringify
  jsonb(sql, { f: () => 1 });
  // @ts-expect-error a Map is written as {}
  jsonb(sql, new Map<string, number>());
}

describe("array", () => {
  it("when a readonly array is written, then the statement is sql.array()'s", async () => {
    const scopes: readonly string[] = ["tasks:read", "tasks:write"];
    const before = await sentBy(sql`select ${sql.array([...scopes])} as v`);
    const q = sql<{ v: string[] }[]>`select ${array(sql, scopes)} as v`;
    expect(await sentBy(q)).toEqual(before);
    expect((await q)[0]?.v).toEqual(["tasks:read", "tasks:write"]);
  });
});
