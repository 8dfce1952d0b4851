import { randomUUID } from "node:crypto";
import { type Api, api, eventually, factories, gatewayUrl, openSse, startExtraReplicas, type StartedStack, startStack, type Tenant } from "@tasksvc/testing";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// Due-date events through the running services. The file runs its own two tasks replicas (the stack
// starts none), ticking every 100 ms with a one-hour window, so that it can stop both and start two
// new ones as a restart does. A due date five seconds ahead is within the window at once and passes
// while the test polls.
const SETTINGS = { DUE_TICK: "100ms", DUE_SOON_WINDOW: "1h" };
type Replica = Awaited<ReturnType<typeof startExtraReplicas>>[number];
let stack: StartedStack;
let f: ReturnType<typeof factories>;
let gw: Api;
let db: postgres.Sql;
let replicas: Replica[] = [];

async function startTasks(n: number): Promise<void> {
  replicas = await startExtraReplicas(stack, "tasks", n, SETTINGS);
}
const stopTasks = async () => void (await Promise.all(replicas.map((r) => r.stop())));

beforeAll(async () => {
  stack = await startStack({ replicas: { gateway: 1, tasks: 0 } });
  await startTasks(2);
  f = factories(stack);
  gw = api(gatewayUrl(stack));
  db = postgres(stack.databaseUrl, { max: 2, onnotice: () => {} });
});
afterAll(async () => {
  await f?.close();
  await db?.end({ timeout: 1 });
  await stopTasks();
  await stack?.stop();
});

/** Ticks of the due-date scheduler in this process: the stack runs in it, and only this file's replicas tick. */
async function ticks(): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${replicas[0]?.opsPort}/metrics`)).text();
  return Number(
    text
      .split("\n")
      .find((l) => l.startsWith("tasksvc_due_tick_seconds_count "))
      ?.split(" ")[1] ?? Number.NaN,
  );
}
/** What shows that ticks did not send something twice, where a sleep would only hope they ran. */
async function ticksPass(n: number): Promise<void> {
  const from = await ticks();
  await eventually(async () => (await ticks()) >= from + n, { what: `${n} more due-date ticks` });
}

interface Seen {
  type: string;
  task: string;
  due: string;
}
const DUE_TYPES = new Set(["task.due_soon", "task.overdue"]);
/** The tenant's due-date events in the order they happened (the feed's, newest first, turned round). */
async function dueEvents(t: Tenant): Promise<Seen[]> {
  const r = await gw.get("/v1/events?limit=100", { token: t.apiKey });
  expect(r.status, r.text).toBe(200);
  const items = r.body.data as Array<{ type: string; data: { id: string; due_date: string } }>;
  return items
    .filter((e) => DUE_TYPES.has(e.type))
    .reverse()
    .map((e) => ({ type: e.type, task: e.data.id, due: e.data.due_date }));
}
const eventsWhen = (t: Tenant, n: number) =>
  eventually(
    async () => {
      const seen = await dueEvents(t);
      if (seen.length < n) throw new Error(`${seen.length} due-date events so far: ${JSON.stringify(seen)}`);
      return seen;
    },
    { what: `${n} due-date events` },
  );
const inSeconds = (s: number) => new Date(Date.now() + s * 1000).toISOString();

async function createTask(t: Tenant, body: Record<string, unknown>) {
  const r = await gw.post("/v1/tasks", { title: "due-date test", ...body }, { token: t.apiKey });
  expect(r.status, r.text).toBe(201);
  return r.body as { id: string; due_date: string };
}

describe("due-date events with two tasks replicas", () => {
  it("when a task's due date comes within the window and then passes, then task.due_soon and task.overdue come once each: in the feed, the stream and to an endpoint that names no types", async () => {
    const t = await f.tenant();
    const ep = await gw.post("/v1/webhook-endpoints", { url: `https://hooks.example.com/${randomUUID()}` }, { token: t.apiKey });
    expect(ep.status, ep.text).toBe(201);
    const stream = await openSse(`${gatewayUrl(stack)}/v1/events/stream?type=task.due_soon,task.overdue`, { token: t.apiKey });
    const task = await createTask(t, { due_date: inSeconds(5) });
    await eventsWhen(t, 2);
    await ticksPass(10);
    expect(await dueEvents(t)).toEqual([
      { type: "task.due_soon", task: task.id, due: task.due_date },
      { type: "task.overdue", task: task.id, due: task.due_date },
    ]);
    // The task as reads show it, with no `changes`.
    const read = await gw.get(`/v1/tasks/${task.id}`, { token: t.apiKey });
    const feed = await gw.get("/v1/events?type=task.overdue", { token: t.apiKey });
    expect(feed.body.data[0].data, feed.text).toEqual(read.body);
    expect(feed.body.data[0]).not.toHaveProperty("changes");
    await stream.nth(2);
    expect(stream.messages.map((m) => m.event)).toEqual(["task.due_soon", "task.overdue"]);
    stream.close();
    const deliveries = await eventually(
      async () => {
        const rows = await db<{ event_type: string; endpoint_id: string }[]>`
          select event_type, endpoint_id from webhooks.deliveries where organization_id = ${t.organizationId} order by created_at`;
        if (rows.filter((r) => r.event_type !== "task.created").length < 2) throw new Error(`the deliveries are ${JSON.stringify(rows)}`);
        return rows;
      },
      { what: "the endpoint's deliveries" },
    );
    // One fan-out batch gives its rows one created_at, so the order of a batch's rows is not theirs to say.
    expect(deliveries.map((d) => d.event_type).sort()).toEqual(["task.created", "task.due_soon", "task.overdue"]);
    expect(new Set(deliveries.map((d) => d.endpoint_id))).toEqual(new Set([ep.body.id]));
  });

  it("when a task is created with a due date already past, then it gets task.overdue alone; moved to a new date, both come again for that date", async () => {
    const t = await f.tenant();
    const task = await createTask(t, { due_date: inSeconds(-3600) });
    await eventsWhen(t, 1);
    const moved = await gw.patch(`/v1/tasks/${task.id}`, { due_date: inSeconds(5) }, { token: t.apiKey });
    expect(moved.status, moved.text).toBe(200);
    await eventsWhen(t, 3);
    await ticksPass(10);
    expect(await dueEvents(t)).toEqual([
      { type: "task.overdue", task: task.id, due: task.due_date },
      { type: "task.due_soon", task: task.id, due: moved.body.due_date },
      { type: "task.overdue", task: task.id, due: moved.body.due_date },
    ]);
  });

  it("when a task is COMPLETED or archived, then it gets no due-date event", async () => {
    const t = await f.tenant();
    await createTask(t, { status: "COMPLETED", due_date: inSeconds(-7200) });
    // Archived before it has a due date, so no tick can come between the date and the archiving.
    const shelved = await createTask(t, {});
    const archived = await gw.post(`/v1/tasks/${shelved.id}/archive`, undefined, { token: t.apiKey });
    expect(archived.status, archived.text).toBe(200);
    const dated = await gw.patch(`/v1/tasks/${shelved.id}`, { due_date: inSeconds(-7200) }, { token: t.apiKey });
    expect(dated.status, dated.text).toBe(200);
    await createTask(t, { status: "COMPLETED", due_date: inSeconds(600) });
    // Due later than the others: once its event is there, a tick has passed over them.
    const open = await createTask(t, { due_date: inSeconds(-60) });
    await eventsWhen(t, 1);
    await ticksPass(10);
    expect(await dueEvents(t)).toEqual([{ type: "task.overdue", task: open.id, due: open.due_date }]);
  });

  it("when the tasks services restart, then the new replicas send none of the events already sent", async () => {
    const t = await f.tenant();
    const before = await createTask(t, { due_date: inSeconds(-60) });
    const soon = await createTask(t, { due_date: inSeconds(1800) });
    await eventsWhen(t, 2);
    await stopTasks();
    await startTasks(2);
    // A task made after the restart shows the new replicas tick; then they tick on.
    const after = await createTask(t, { due_date: inSeconds(-30) });
    await eventsWhen(t, 3);
    await ticksPass(10);
    // The first two may come in either order (one tick writes both kinds).
    const seen = await dueEvents(t);
    expect(seen.slice(0, 2)).toEqual(
      expect.arrayContaining([
        { type: "task.overdue", task: before.id, due: before.due_date },
        { type: "task.due_soon", task: soon.id, due: soon.due_date },
      ]),
    );
    expect(seen.slice(2)).toEqual([{ type: "task.overdue", task: after.id, due: after.due_date }]);
  });
});
