import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { POOL_OPTIONS, plannedEachRun } from "../src/index.js";

// A prepared statement may be switched to its generic plan after five runs on a connection; a
// statement sent through plannedEachRun is never prepared, so each run is planned with its values.
// auto_explain, sent to this client, shows each run's plan: a generic one names its parameters ($1).
const stack = inject("stack");
const plans: string[] = [];
const sql = postgres(stack.databaseUrl, {
  ...POOL_OPTIONS,
  max: 1,
  connection: { client_min_messages: "log", application_name: "planned-each-run-test" },
  onnotice: (n) => {
    const text = String(n["message"] ?? "");
    const at = text.indexOf("{");
    // The plan alone: the query's text names its parameters whichever plan ran.
    if (text.startsWith("duration:") && at >= 0) plans.push(JSON.stringify((JSON.parse(text.slice(at)) as { Plan: unknown }).Plan));
  },
});

beforeAll(async () => {
  await sql`load 'auto_explain'`;
  await sql`set auto_explain.log_min_duration = 0`;
  await sql`set auto_explain.log_format = json`;
});

afterAll(async () => {
  await sql.end({ timeout: 1 });
});

/** This connection's prepared statements whose text holds `marker`. */
async function prepared(marker: string): Promise<number> {
  const [row] =
    await sql`select count(*)::int as n from pg_prepared_statements where statement like ${`%${marker}%`} and statement not like '%pg_prepared_statements%'`;
  return row?.["n"] as number;
}

describe("a statement planned each run", () => {
  it("when it runs ten times on one connection, then each answer is its own, it is never prepared, and no run is on a generic plan", async () => {
    plans.length = 0;
    for (let i = 1; i <= 10; i++) {
      const rows = await plannedEachRun(
        sql<{ n: number }[]>`select count(*)::int as n from generate_series(1, ${i}::int) g where g <= ${i}::int /* each_run */`,
      );
      expect(rows[0]?.n).toBe(i);
    }
    expect(await prepared("each_run")).toBe(0);
    const mine = plans.filter((p) => p.includes("generate_series"));
    expect(mine).toHaveLength(10);
    for (const p of mine) expect(p).not.toMatch(/\$\d/);
  });

  it("when the same statement is sent as usual, then the driver prepares it, and on a generic plan the plan names its parameters", async () => {
    await sql`set plan_cache_mode = force_generic_plan`;
    plans.length = 0;
    try {
      for (let i = 1; i <= 3; i++) await sql`select count(*)::int as n from generate_series(1, ${i}::int) g where g <= ${i}::int /* as_usual */`;
    } finally {
      await sql`reset plan_cache_mode`;
    }
    expect(await prepared("as_usual")).toBe(1);
    const mine = plans.filter((p) => p.includes("generate_series"));
    expect(mine).toHaveLength(3);
    for (const p of mine) expect(p).toMatch(/\$\d/);
  });
});
