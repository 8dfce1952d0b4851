import { createClient, unwrap } from "@tasksvc/client";
import { factories, startStack, type StartedStack, type Tenant } from "@tasksvc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// Issue 16 end to end: a recurring task created through the API gets its next occurrence from
// the running tasks service's scheduler, with two tasks replicas ticking. The scheduler's clock
// runs a day ahead (RECURRENCE_CLOCK_AHEAD) and ticks every 100 ms, so "tomorrow" comes at once.
let stack: StartedStack;
let f: ReturnType<typeof factories>;
beforeAll(async () => {
  stack = await startStack({ env: { RECURRENCE_CLOCK_AHEAD: "1d", RECURRENCE_TICK: "100ms" }, replicas: { gateway: 1, tasks: 2 } });
  f = factories(stack);
});
afterAll(async () => {
  await f?.close();
  await stack?.stop();
});

const client = (t: Tenant) => createClient({ baseUrl: stack.gatewayUrls[0] as string, token: t.apiKey, retries: 0 });

describe("recurring tasks through the running service", () => {
  it("when a daily task is created, then its next occurrence appears once, as a TODO task due tomorrow, with its task.created event in the feed", async () => {
    const t = await f.tenant();
    const today = new Date().toISOString().slice(0, 10);
    const head = unwrap(await client(t).POST("/v1/tasks", { body: { title: "stand-up notes", recurrence: { frequency: "DAILY", start_date: today } } }));
    const deadline = Date.now() + 10_000;
    let others: Array<{ id: string; title: string; status: string; due_date: string | null; recurrence: unknown }> = [];
    while (Date.now() < deadline) {
      others = unwrap(await client(t).GET("/v1/tasks", {})).data.filter((x) => x.id !== head.id);
      if (others.length > 0) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    // Ticks keep coming (both replicas, every 100 ms): it must stay one.
    await new Promise((r) => setTimeout(r, 500));
    others = unwrap(await client(t).GET("/v1/tasks", {})).data.filter((x) => x.id !== head.id);
    const tomorrow = new Date(Date.parse(`${today}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
    expect(others).toEqual([expect.objectContaining({ title: "stand-up notes", status: "TODO", due_date: `${tomorrow}T00:00:00.000Z`, recurrence: null })]);
    const created = unwrap(await client(t).GET("/v1/events", { params: { query: { type: "task.created" } } })).data;
    expect(created.map((e) => e.data.id).sort()).toEqual([head.id, others[0]?.id].sort());
  });

  it("when a task's recurrence comes as an rrule, then it is stored as its fields; one this API cannot keep is a 400 naming /recurrence/rrule", async () => {
    const t = await f.tenant();
    const made = unwrap(await client(t).POST("/v1/tasks", { body: { title: "biweekly", recurrence: { rrule: "FREQ=WEEKLY;INTERVAL=2;BYDAY=TU" } } }));
    expect(made.recurrence).toMatchObject({ frequency: "WEEKLY", interval: 2, by_weekday: [2], rrule: "FREQ=WEEKLY;INTERVAL=2;BYDAY=TU" });
    const bad = await client(t).POST("/v1/tasks", { body: { title: "hourly", recurrence: { rrule: "FREQ=DAILY;BYHOUR=9" } } });
    expect(bad.response.status).toBe(400);
    expect(JSON.stringify(bad.error)).toContain("/recurrence/rrule");
    expect(unwrap(await client(t).GET("/v1/tasks", {})).data.map((x) => x.title)).toEqual(["biweekly"]);
  });
});
