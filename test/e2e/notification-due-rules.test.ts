import { Notification, page, taskEventsStream } from "@tasksvc/contracts";
import { connectNats, jetstreamManager, type NatsConnection } from "@tasksvc/nats";
import { type Api, api, bodyOf, eventually, factories, gatewayUrl, type StartedStack, startExtraReplicas, startStack } from "@tasksvc/testing";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// The due-date rules of the inbox with the real scheduler: the shared stack checks due dates
// hourly, so this file runs its own stack with one tasks replica of its own ticking every 100 ms
// and a one-hour window (as due-events does); its notifications service is the stack's.
const SETTINGS = { DUE_TICK: "100ms", DUE_SOON_WINDOW: "1h" };
let stack: StartedStack;
let f: ReturnType<typeof factories>;
let gw: Api;
let db: postgres.Sql;
let nc: NatsConnection;
let tasks: { stop(): Promise<void> } | undefined;

beforeAll(async () => {
  stack = await startStack({ replicas: { gateway: 1, tasks: 0 } });
  [tasks] = await startExtraReplicas(stack, "tasks", 1, SETTINGS);
  f = factories(stack);
  gw = api(gatewayUrl(stack));
  db = postgres(stack.databaseUrl, { max: 2, onnotice: () => {} });
  nc = await connectNats({ url: stack.natsUrl, name: "test-notification-due-rules" });
});
afterAll(async () => {
  await f?.close();
  await nc?.drain();
  await db?.end({ timeout: 1 });
  await tasks?.stop();
  await stack?.stop();
});

interface User {
  apiKey: string;
  userId: string;
}
const auth = (k: User) => ({ token: k.apiKey });
const inSeconds = (s: number) => new Date(Date.now() + s * 1000).toISOString();

async function createTask(k: User, body: Record<string, unknown>): Promise<string> {
  const r = await gw.post("/v1/tasks", { title: "due", ...body }, auth(k));
  expect(r.status, r.text).toBe(201);
  return r.body.id as string;
}

/** Polls the feed until it holds `n` due-date events; answers `type task` → event id. */
async function dueEvents(k: User, n: number): Promise<Map<string, string>> {
  return eventually(
    async () => {
      const r = await gw.get("/v1/events?limit=100", auth(k));
      const due = (r.body.data as Array<{ id: string; type: string; data: { id: string } }>).filter(
        (e) => e.type === "task.due_soon" || e.type === "task.overdue",
      );
      if (due.length < n) throw new Error(`${due.length} of ${n} due-date events: ${JSON.stringify(due.map((e) => e.type))}`);
      return new Map(due.map((e) => [`${e.type} ${e.data.id}`, e.id]));
    },
    { what: `${n} due-date events`, timeoutMs: 30_000 },
  );
}

/** The organization's outbox empty, then the notifications consumer's ack floor at the stream's last message. */
async function settled(orgId: string): Promise<void> {
  await eventually(async () => (await db<{ n: number }[]>`select count(*)::int as n from tasks.outbox where organization_id = ${orgId}`)[0]?.n === 0, {
    what: "the organization's outbox to drain",
  });
  const jsm = await jetstreamManager(nc);
  const stream = taskEventsStream(stack.namespace);
  const last = (await jsm.streams.info(stream)).state.last_seq;
  await eventually(async () => (await jsm.consumers.info(stream, `${stack.namespace}_notifications`)).ack_floor.stream_seq >= last, {
    what: "the notifications consumer to acknowledge every event so far",
  });
}

/** The user's whole inbox as sorted `type task actor event` lines, and its unread count. */
async function inboxOf(k: User): Promise<{ lines: string[]; unread: number }> {
  const r = await gw.get("/v1/notifications?limit=100", auth(k));
  expect(r.status, r.text).toBe(200);
  const lines = bodyOf(r, page(Notification)).data.map((n) => [n.type, n.task_id, n.comment_id ?? "-", n.actor_id ?? "-", n.event_id].join(" "));
  const count = await gw.get("/v1/notifications/unread-count", auth(k));
  return { lines: lines.sort(), unread: count.body.count as number };
}
const expectInbox = async (k: User, expected: string[]) => expect(await inboxOf(k)).toEqual({ lines: [...expected].sort(), unread: expected.length });

describe("due_soon and overdue", () => {
  it("when an assigned task comes within the window and then passes its date, then each assignee is told due_soon and overdue once with actor null, its creator too when assigned, and nobody else", async () => {
    const t = await f.tenant();
    const owner = { apiKey: t.apiKey, userId: t.userId };
    const [ann, bob] = [await f.user(t.organizationId), await f.user(t.organizationId)];
    // Ann creates it and assigns herself: the assignment is not hers to hear of, the due date is.
    const task = await createTask(ann, { assignee_ids: [ann.userId, bob.userId], due_date: inSeconds(5) });
    const events = await dueEvents(owner, 2);
    await settled(t.organizationId);
    const created = (await gw.get(`/v1/events?type=task.created&task_id=${task}`, auth(owner))).body.data[0].id as string;
    const due = [`due_soon ${task} - - ${events.get(`task.due_soon ${task}`)}`, `overdue ${task} - - ${events.get(`task.overdue ${task}`)}`];
    await expectInbox(ann, due);
    await expectInbox(bob, [`assigned ${task} - ${ann.userId} ${created}`, ...due]);
    await expectInbox(owner, []);
  });

  it("when a task without assignees is due, then its owner is told, actor null, though the owner made it: due_soon within the window, overdue alone when created past its date", async () => {
    const t = await f.tenant();
    const owner = { apiKey: t.apiKey, userId: t.userId };
    const ann = await f.user(t.organizationId);
    const late = await createTask(ann, { due_date: inSeconds(-3600) });
    const soon = await createTask(owner, { due_date: inSeconds(1800) });
    const events = await dueEvents(owner, 2);
    await settled(t.organizationId);
    expect([...events.keys()].sort()).toEqual([`task.due_soon ${soon}`, `task.overdue ${late}`]);
    await expectInbox(ann, [`overdue ${late} - - ${events.get(`task.overdue ${late}`)}`]);
    await expectInbox(owner, [`due_soon ${soon} - - ${events.get(`task.due_soon ${soon}`)}`]);
  });
});
