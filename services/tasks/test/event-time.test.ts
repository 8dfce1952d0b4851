import { actorOf } from "@tasksvc/contracts";
import type { Caller, RpcContext } from "@tasksvc/contracts";
import { createDb, newId } from "@tasksvc/db";
import { eventually } from "@tasksvc/testing";
import { afterAll, describe, expect, inject, it } from "vitest";
import { eventsSystem } from "../src/domain/events/system.js";
import { tasksResources } from "../src/domain/resources.js";
import { tasksSystem } from "../src/domain/tasks.js";
import { eventsRepo } from "../src/repo/events-repo.js";
import { ISO_SQL } from "../src/repo/sql-time.js";

// An event's `timestamp` (the envelope's created_at) is the time of its write on the database's
// clock, whichever path wrote it: the create statement or emit(). So a create's equals its task's
// created_at, an update's the task's updated_at, an archive's its archived_at, and the webhook
// fan-out compares it with its endpoints' creation on that same clock.
const stack = inject("stack");
const db = createDb({ url: stack.databaseUrl, schema: "tasks", max: 2 });
afterAll(async () => {
  await db.end({ timeout: 1 });
});
const resources = tasksResources(db);
const svc = tasksSystem(resources);
const events = eventsSystem(resources);

function caller(): Caller {
  const org = newId("org");
  const ctx: RpcContext = { request_id: "req_evt_time", organization_id: org, user_id: "usr_evt_time", credential_id: "key_evt_time", scopes: [], plan: "pro" };
  return { organizationId: org, userId: "usr_evt_time", credentialId: "key_evt_time", idempotencyKey: undefined, actor: actorOf(ctx), ctx };
}

describe("an event's time", () => {
  it("when a task is created, updated and archived, then each event's timestamp is the time its write gave the task", async () => {
    const c = caller();
    const created = await svc.createTask(c, { title: "timed" });
    const updated = await svc.updateTask(c, created.id, { title: "timed again" });
    await svc.setArchived(c, created.id, true);
    const [row] = await db.sql<{ archived_at: string }[]>`
      select to_char(archived_at at time zone 'UTC', ${db.sql.unsafe(ISO_SQL)}) as archived_at from tasks
      where organization_id = ${c.organizationId} and number = ${Number(created.id.slice(2))}`;
    const feed = await events.listEvents(c, { limit: 10 });
    expect(feed.data.map((e) => [e.type, e.timestamp])).toEqual([
      ["task.archived", row?.archived_at],
      ["task.updated", updated.updated_at],
      ["task.created", created.created_at],
    ]);
    expect(created.updated_at).toBe(created.created_at);
  });

  it("when the writing transaction began a while before the event is written, then the event carries the transaction's time", async () => {
    const c = caller();
    const org = c.organizationId;
    const task = await svc.createTask(c, { title: "late emit" });
    const began = await db.tx(async (t) => {
      const [now] = await t<{ at: string }[]>`select to_char(now() at time zone 'UTC', ${t.unsafe(ISO_SQL)}) as at`;
      // The database's clock moves on inside the transaction, its `now()` does not.
      await eventually(async () => (await t<{ past: boolean }[]>`select clock_timestamp() > now() + interval '5 ms' as past`)[0]?.past === true, {
        intervalMs: 1,
      });
      await eventsRepo(t).emit(org, c.userId, "task.updated", task);
      return now?.at;
    });
    const [event] = await db.sql<{ at: string }[]>`
      select payload->>'created_at' as at from events where organization_id = ${org} and type = 'task.updated'`;
    expect(event?.at).toBe(began);
  });
});
