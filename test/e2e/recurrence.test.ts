import { randomUUID } from "node:crypto";
import { createClient, unwrap } from "@tasksvc/client";
import { boardsRpc, systemContext } from "@tasksvc/contracts";
import { client as rpcClient, connectNats } from "@tasksvc/nats";
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

/** A series' value on the first tasks replica's /metrics (NaN when absent). */
async function metric(series: string): Promise<number> {
  const text = await (await fetch(`${stack.opsUrls.tasks?.[0]}/metrics`)).text();
  return Number(
    text
      .split("\n")
      .find((l) => l.startsWith(`${series} `))
      ?.split(" ")[1] ?? Number.NaN,
  );
}

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
    expect(others).toEqual([
      expect.objectContaining({
        title: "stand-up notes",
        status: "TODO",
        due_date: `${tomorrow}T00:00:00.000Z`,
        recurrence: null,
        series_task_id: head.id,
        occurrence_date: tomorrow,
      }),
    ]);
    // The series' occurrences, by its head; an id that names no task is a 404, as for parent_task_id.
    const bySeries = unwrap(await client(t).GET("/v1/tasks", { params: { query: { series_task_id: head.id } } })).data;
    expect(bySeries.map((x) => x.id)).toEqual([others[0]?.id]);
    const none = await client(t).GET("/v1/tasks", { params: { query: { series_task_id: "T-999999" } } });
    expect(none.response.status).toBe(404);
    expect(await metric("tasksvc_recurrence_occurrences_total")).toBeGreaterThanOrEqual(1);
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

  it("when an occurrence with rollover_enabled is still open after its day, then it is on its owner's board for the next day once, and an entry the owner removes stays removed", async () => {
    const t = await f.tenant();
    const today = new Date().toISOString().slice(0, 10);
    const tomorrow = new Date(Date.parse(`${today}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
    // Completion basis: no next occurrence until this one is done, so the head itself rolls.
    const head = unwrap(
      await client(t).POST("/v1/tasks", {
        body: { title: "inbox zero", recurrence: { frequency: "DAILY", basis: "COMPLETION", start_date: today, rollover_enabled: true } },
      }),
    );
    const todoOf = async () => unwrap(await client(t).GET("/v1/daily-plan", { params: { query: { date: tomorrow } } })).sections[0]?.entries ?? [];
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline && (await todoOf()).length === 0) await new Promise((r) => setTimeout(r, 100));
    // Both replicas keep ticking every 100 ms: it must stay one entry.
    await new Promise((r) => setTimeout(r, 500));
    const entries = await todoOf();
    expect(entries).toEqual([expect.objectContaining({ section: "TODO", task_id: head.id, title: "inbox zero", status: "TODO" })]);
    const board = unwrap(await client(t).GET("/v1/daily-plan", { params: { query: { date: tomorrow } } }));
    expect(board.sections[0]?.status, "a rolled-over entry fills the section like a planned one").toBe("FILLING");
    unwrap(await client(t).DELETE("/v1/daily-plan/entries/{entry_id}", { params: { path: { entry_id: entries[0]?.id ?? "" } } }));
    await new Promise((r) => setTimeout(r, 500));
    expect(await todoOf()).toEqual([]);
    // The boards service's own record makes it once per task and day, whoever asks (a scheduler
    // replica that restarted has forgotten what it asked).
    const nc = await connectNats({ url: stack.natsUrl, name: "rollover-test" });
    try {
      const boards = rpcClient(nc, boardsRpc, { namespace: stack.namespace, timeoutMs: 10_000 });
      const ask = (date: string) =>
        boards.call(
          "rollOver",
          { organization_id: t.organizationId, user_id: t.userId, date, task_number: Number(head.id.slice(2)), section: "TODO" },
          systemContext(`test_${randomUUID()}`),
        );
      expect(await ask(tomorrow)).toEqual({ placed: false });
      expect(await todoOf()).toEqual([]);
      const later = new Date(Date.parse(`${tomorrow}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
      expect(await ask(later)).toEqual({ placed: true });
      expect(await ask(later)).toEqual({ placed: false });
    } finally {
      await nc.drain();
    }
    // The scheduler's metrics (the replicas of this stack run in this process, on one registry).
    expect(await metric('tasksvc_recurrence_rollovers_total{outcome="placed"}')).toBeGreaterThanOrEqual(1);
    expect(await metric("tasksvc_recurrence_series_read_total")).toBeGreaterThanOrEqual(1);
    expect(await metric("tasksvc_recurrence_tick_seconds_count")).toBeGreaterThanOrEqual(1);
  });
});
