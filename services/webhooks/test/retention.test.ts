import { createDb, migrate, newId } from "@tasksvc/db";
import { createLogger } from "@tasksvc/logger";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { deliveriesRepo } from "../src/repo/deliveries-repo.js";
import { endpointsRepo } from "../src/repo/endpoints-repo.js";
import { MIGRATIONS_DIR } from "../src/service.js";

// The delivery log keeps 30 days, like the events feed: the hourly sweep deletes finished
// deliveries past that, with their attempts. On a schema of its own, so that the count is ours.
const stack = inject("stack");
const SCHEMA = "webhooks_retention_test";
const log = createLogger({ service: "retention-test", level: "silent" });
const db = createDb({ url: stack.databaseUrl, schema: SCHEMA, max: 2 });
const sql = db.sql;

beforeAll(async () => {
  await migrate({ url: stack.databaseUrl, schema: SCHEMA, dir: MIGRATIONS_DIR, log });
});
afterAll(async () => {
  await sql.unsafe(`drop schema ${SCHEMA} cascade`);
  await db.end({ timeout: 1 });
});

describe("the delivery log sweep", () => {
  it("when finished deliveries are past 30 days, then the sweep deletes them and their attempts, in batches; younger ones and unfinished work stay", async () => {
    const org = newId("org");
    const made = await endpointsRepo(sql).insert(
      { id: newId("whe"), organizationId: org, url: "https://hooks.example.com/x", eventTypes: [], rateLimit: null, secretSealed: "v1.test" },
      1,
    );
    if (!("endpoint" in made)) throw new Error("the endpoint was not made");
    const { endpoint } = made;
    const rows: Array<[string, string, string]> = [
      ["old-succeeded", "SUCCEEDED", "31 days"],
      ["old-failed", "FAILED", "30 days 1 second"],
      ["old-disabled", "DISABLED", "90 days"],
      ["old-pending", "PENDING", "40 days"],
      ["old-delivering", "DELIVERING", "40 days"],
      ["young-succeeded", "SUCCEEDED", "29 days 23 hours"],
      ["young-failed", "FAILED", "1 minute"],
    ];
    for (const [name, state, age] of rows) {
      const id = `whd_${name}_${org}`;
      await sql`insert into deliveries (id, organization_id, endpoint_id, event_id, event_type, payload, state, created_at)
        values (${id}, ${org}, ${endpoint.id}, ${`evt_${name}_${org}`}, 'task.created', '{}'::jsonb, ${state}, now() - ${age}::interval)`;
      await sql`insert into attempts (delivery_id, attempt, attempted_at, outcome, status) values (${id}, 1, now(), 'request_failed', 500)`;
    }
    expect(await deliveriesRepo(sql).sweep(1)).toBe(3);
    const left = await sql<{ id: string }[]>`select id from deliveries where organization_id = ${org} order by id`;
    expect(left.map((r) => r.id.split("_")[1])).toEqual(["old-delivering", "old-pending", "young-failed", "young-succeeded"]);
    const attempts = await sql<{ n: number }[]>`
      select count(*)::int as n from attempts where delivery_id like ${`%_${org}`}`;
    expect(attempts[0]?.n).toBe(4);
    expect(await deliveriesRepo(sql).sweep()).toBe(0);
  });
});
