import { randomUUID } from "node:crypto";
import { createClient, unwrap } from "@tasksvc/client";
import { boardsRpc, rolloverMessages, systemContext } from "@tasksvc/contracts";
import { client as rpcClient, connectNats, encodeJson, jetstream } from "@tasksvc/nats";
import { eventually, factories, startStack, type StartedStack, type Tenant, gatewayUrl } from "@tasksvc/testing";
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

/**
 * Resolves once the scheduler has finished `n` more ticks (of either replica) than when called:
 * what shows that ticks did not make something twice, where a sleep would only hope they ran.
 */
async function ticksPass(n: number): Promise<void> {
  const ticks = () => metric("tasksvc_recurrence_tick_seconds_count");
  const from = await ticks();
  await eventually(async () => (await ticks()) >= from + n, { what: `${n} more scheduler ticks` });
}

const client = (t: Tenant) => createClient({ baseUrl: gatewayUrl(stack), token: t.apiKey, retries: 0 });

describe("recurring tasks through the running service", () => {
  it("when a daily task is created, then its next occurrence appears once, as a TODO task due tomorrow, with its task.created event in the feed", async () => {
    const t = await f.tenant();
    const today = new Date().toISOString().slice(0, 10);
    const head = unwrap(await client(t).POST("/v1/tasks", { body: { title: "stand-up notes", recurrence: { frequency: "DAILY", start_date: today } } }));
    const othersNow = async () => unwrap(await client(t).GET("/v1/tasks", {})).data.filter((x) => x.id !== head.id);
    await eventually(async () => (await othersNow()).length > 0, { intervalMs: 100, what: "the next occurrence" });
    // Ticks keep coming (both replicas, every 100 ms): after ten more it must still be one (at most
    // two were under way when counting began).
    await ticksPass(10);
    const others = await othersNow();
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

  it("when a recurring task is created without a due date, then it is due on its first occurrence day; one given is kept", async () => {
    const t = await f.tenant();
    const before = new Date().toISOString().slice(0, 10);
    const daily = unwrap(await client(t).POST("/v1/tasks", { body: { title: "journal", recurrence: { frequency: "DAILY" } } }));
    const after = new Date().toISOString().slice(0, 10);
    expect([`${before}T00:00:00.000Z`, `${after}T00:00:00.000Z`]).toContain(daily.due_date);
    // 2030-01-02 is a Wednesday: the first Monday from it is Jan 7.
    const weekly = unwrap(
      await client(t).POST("/v1/tasks", { body: { title: "review", recurrence: { frequency: "WEEKLY", by_weekday: [1], start_date: "2030-01-02" } } }),
    );
    expect(weekly.due_date).toBe("2030-01-07T00:00:00.000Z");
    const given = unwrap(await client(t).POST("/v1/tasks", { body: { title: "given", due_date: "2030-03-01", recurrence: { frequency: "DAILY" } } }));
    expect(given.due_date).toBe("2030-03-01T00:00:00.000Z");
  });

  /** Days from today (UTC), as YYYY-MM-DD. */
  const inDays = (n: number) => new Date(Date.parse(`${new Date().toISOString().slice(0, 10)}T00:00:00Z`) + n * 86_400_000).toISOString().slice(0, 10);

  /** A series' occurrences as GET /v1/tasks?series_task_id= lists them (not archived), by day. */
  async function occurrencesOf(t: Tenant, head: string) {
    const page = unwrap(await client(t).GET("/v1/tasks", { params: { query: { series_task_id: head } } }));
    return page.data.sort((a, b) => String(a.occurrence_date).localeCompare(String(b.occurrence_date)));
  }
  /** The task.created events of one task in the feed. */
  const createdEvents = async (t: Tenant, id: string) =>
    unwrap(await client(t).GET("/v1/events", { params: { query: { type: "task.created", task_id: id } } })).data;

  it("when the latest occurrence of a completion-basis series is completed or archived, then the next is listed in the answer's wake, due one interval after, with its task.created event", async () => {
    const t = await f.tenant();
    const today = inDays(0);
    const head = unwrap(
      await client(t).POST("/v1/tasks", { body: { title: "inbox zero", recurrence: { frequency: "DAILY", basis: "COMPLETION", start_date: today } } }),
    );
    expect(head.due_date).toBe(`${today}T00:00:00.000Z`);
    unwrap(await client(t).PATCH("/v1/tasks/{task_id}", { params: { path: { task_id: head.id } }, body: { status: "COMPLETED" } }));
    const [next, ...none] = await occurrencesOf(t, head.id);
    expect(none).toEqual([]);
    expect(next).toMatchObject({
      title: "inbox zero",
      status: "TODO",
      due_date: `${inDays(1)}T00:00:00.000Z`,
      occurrence_date: inDays(1),
      series_task_id: head.id,
      recurrence: null,
    });
    expect((await createdEvents(t, next?.id ?? "")).map((e) => e.data)).toEqual([next]);
    // Archived (dismissed) today, before its own day: the next is one interval after that day.
    unwrap(await client(t).POST("/v1/tasks/{task_id}/archive", { params: { path: { task_id: next?.id ?? "" } } }));
    const [third, ...rest] = await occurrencesOf(t, head.id);
    expect(rest).toEqual([]);
    expect(third).toMatchObject({ due_date: `${inDays(2)}T00:00:00.000Z`, occurrence_date: inDays(2), status: "TODO" });
    expect(await createdEvents(t, third?.id ?? "")).toHaveLength(1);
  });

  it("when the latest occurrence of a schedule-basis series is completed or archived, then the rule's next slot is listed in the answer's wake", async () => {
    const t = await f.tenant();
    // Weekly on today's weekday: the scheduler, a day ahead here, has nothing to make for a week.
    const head = unwrap(await client(t).POST("/v1/tasks", { body: { title: "water the plants", recurrence: { frequency: "WEEKLY", start_date: inDays(0) } } }));
    unwrap(await client(t).PATCH("/v1/tasks/{task_id}", { params: { path: { task_id: head.id } }, body: { status: "COMPLETED" } }));
    const [next] = await occurrencesOf(t, head.id);
    expect(next).toMatchObject({ due_date: `${inDays(7)}T00:00:00.000Z`, occurrence_date: inDays(7), series_task_id: head.id });
    expect(await createdEvents(t, next?.id ?? "")).toHaveLength(1);
    unwrap(await client(t).POST("/v1/tasks/{task_id}/archive", { params: { path: { task_id: next?.id ?? "" } } }));
    expect((await occurrencesOf(t, head.id)).map((x) => x.occurrence_date)).toEqual([inDays(14)]);
  });

  it("when two requests complete the latest occurrence at once, then one next occurrence is made", async () => {
    const t = await f.tenant();
    const head = unwrap(
      await client(t).POST("/v1/tasks", { body: { title: "stretch", recurrence: { frequency: "DAILY", basis: "COMPLETION", start_date: inDays(0) } } }),
    );
    const complete = () => client(t).PATCH("/v1/tasks/{task_id}", { params: { path: { task_id: head.id } }, body: { status: "COMPLETED" } });
    const answers = await Promise.all([complete(), complete(), complete()]);
    expect(answers.map((a) => a.response.status)).toEqual([200, 200, 200]);
    expect((await occurrencesOf(t, head.id)).map((x) => x.occurrence_date)).toEqual([inDays(1)]);
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

  it("when an rrule this API cannot keep comes with the rule's fields or for a task that does not exist, then the 400 names every problem before any lookup", async () => {
    const t = await f.tenant();
    const both = await client(t).POST("/v1/tasks", { body: { title: "twice", recurrence: { frequency: "DAILY", rrule: "FREQ=DAILY;BYHOUR=9" } } });
    expect(both.response.status).toBe(400);
    expect(both.error).toMatchObject({
      code: "validation_failed",
      detail: "The request body is invalid: /recurrence/frequency give the rule as rrule or as fields, not both",
      errors: [
        { pointer: "/recurrence/frequency", message: "give the rule as rrule or as fields, not both" },
        { pointer: "/recurrence/rrule", message: expect.stringMatching(/^has BYHOUR/) },
      ],
    });
    const missing = await client(t).PATCH("/v1/tasks/{task_id}", {
      params: { path: { task_id: "T-999" } },
      body: { recurrence: { rrule: "FREQ=WEEKLY;BYDAY=1MO" } },
    });
    expect(missing.response.status).toBe(400);
    expect(missing.error).toMatchObject({
      detail: "The request body is invalid: /recurrence/rrule BYDAY takes plain weekdays here (MO,TH), not ordinals such as 1MO",
      errors: [{ pointer: "/recurrence/rrule", message: "BYDAY takes plain weekdays here (MO,TH), not ordinals such as 1MO" }],
    });
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
    await eventually(async () => (await todoOf()).length > 0, { intervalMs: 100, what: "the rolled-over entry" });
    // Both replicas keep ticking every 100 ms: after ten more ticks it must still be one entry.
    await ticksPass(10);
    const entries = await todoOf();
    expect(entries).toEqual([expect.objectContaining({ section: "TODO", task_id: head.id, title: "inbox zero", status: "TODO" })]);
    const board = unwrap(await client(t).GET("/v1/daily-plan", { params: { query: { date: tomorrow } } }));
    expect(board.sections[0]?.status, "a rolled-over entry fills the section like a planned one").toBe("FILLING");
    unwrap(await client(t).DELETE("/v1/daily-plan/entries/{entry_id}", { params: { path: { entry_id: entries[0]?.id ?? "" } } }));
    await ticksPass(10);
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
      // A request on the rollover stream, as the scheduler sends it, twice (past the stream's
      // de-duplication): one entry on that day's board.
      const m = rolloverMessages.request;
      const request = {
        organization_id: t.organizationId,
        user_id: t.userId,
        date: "2027-01-04",
        task_number: Number(head.id.slice(2)),
        section: "TODO",
      } as const;
      const js = jetstream(nc);
      // Absent (NaN) until the first such outcome.
      const already = (await metric('tasksvc_board_rollovers_total{outcome="already"}')) || 0;
      for (const n of [1, 2]) await js.publish(m.subject(stack.namespace), encodeJson(request), { msgID: `${m.msgId(request)}.${n}` });
      const onThatDay = async () => unwrap(await client(t).GET("/v1/daily-plan", { params: { query: { date: "2027-01-04" } } })).sections[0]?.entries ?? [];
      await eventually(async () => (await onThatDay()).length > 0, { intervalMs: 100, what: "the requested entry" });
      await eventually(async () => (await metric('tasksvc_board_rollovers_total{outcome="already"}')) > already, { what: "the second request handled" });
      expect((await onThatDay()).map((e) => e.task_id)).toEqual([head.id]);
    } finally {
      await nc.drain();
    }
    // The scheduler's and the boards service's metrics (the replicas of this stack run in this
    // process, on one registry): the scheduler requested, the boards service placed.
    expect(await metric('tasksvc_recurrence_rollovers_total{outcome="requested"}')).toBeGreaterThanOrEqual(1);
    expect(await metric('tasksvc_board_rollovers_total{outcome="placed"}')).toBeGreaterThanOrEqual(1);
    expect(await metric("tasksvc_recurrence_series_read_total")).toBeGreaterThanOrEqual(1);
    expect(await metric("tasksvc_recurrence_tick_seconds_count")).toBeGreaterThanOrEqual(1);
  });
});
