import { createDb, newId } from "@tasksvc/db";
import { afterAll, describe, expect, inject, it } from "vitest";
import { eventsRepo } from "../src/repo/events-repo.js";

// The events feed keeps 30 days: the hourly sweep deletes older events, a batch at a time.
const stack = inject("stack");
const db = createDb({ url: stack.databaseUrl, schema: "tasks", max: 2 });
afterAll(async () => {
  await db.end({ timeout: 1 });
});

describe("the events sweep", () => {
  it("when events are past 30 days, then the sweep deletes them, in batches, and keeps the younger ones", async () => {
    const org = newId("org");
    const ages = ["31 days", "30 days 1 second", "40 days", "29 days 23 hours", "1 minute"];
    for (const [i, age] of ages.entries()) {
      await db.sql`insert into events (id, organization_id, type, created_at, payload)
        values (${`evt_sweep_${org}_${i}`}, ${org}, 'task.created', now() - ${age}::interval, '{}'::jsonb)`;
    }
    const repo = eventsRepo(db.sql);
    expect(await repo.sweep(1)).toBeGreaterThanOrEqual(3);
    const left = await db.sql<{ id: string }[]>`select id from events where organization_id = ${org} order by id`;
    expect(left.map((r) => r.id)).toEqual([`evt_sweep_${org}_3`, `evt_sweep_${org}_4`]);
  });
});
