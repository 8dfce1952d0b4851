import { randomUUID } from "node:crypto";
import { taskEventSubject, taskEventsStream } from "@tasksvc/contracts";
import { connectNats, encodeJson, jetstream, jetstreamManager, type NatsConnection } from "@tasksvc/nats";
import { createDb } from "@tasksvc/db";
import { createLogger } from "@tasksvc/logger";
import { e2eContext, eventually, type Tenant } from "@tasksvc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ingestSystem } from "../src/domain/ingest.js";
import { notificationsResources } from "../src/domain/resources.js";

// Messages the other producers are adding (comments with mentions, due dates, actor_id), published
// onto the task events stream in their announced shapes, read back through the inbox routes: the
// consumer's statement with its mention records, the followers asked of the tasks service, and a
// redelivered message adding nothing.
const { stack, gw, f, db } = e2eContext();
let nc: NatsConnection;

beforeAll(async () => {
  nc = await connectNats({ url: stack.natsUrl, name: "test-notification-events" });
});
afterAll(async () => {
  await nc?.close();
});

type Key = Pick<Tenant, "apiKey">;
const auth = (k: Key) => ({ token: k.apiKey });
const kinds = async (k: Key) => {
  const r = await gw.get("/v1/notifications?limit=100", auth(k));
  expect(r.status, r.text).toBe(200);
  return (r.body.data as Array<{ type: string; comment_id: string | null; actor_id: string | null }>)
    .map((n) => `${n.type}:${n.comment_id ?? "-"}:${n.actor_id ?? "-"}`)
    .sort();
};

/** Type strings the contracts do not list yet; the subject is the stream's own. */
async function publish(org: string, type: string, data: unknown, actorId: string | null, id = `evt_${randomUUID()}`): Promise<string> {
  const subject = taskEventSubject(stack.namespace, "task.created").replace(/task\.created$/, type);
  await jetstream(nc).publish(subject, encodeJson({ id, type, organization_id: org, created_at: new Date().toISOString(), actor_id: actorId, data }));
  return id;
}

/** Every message on the stream handled and acknowledged by the consumer: a fact, not a pause. */
async function drained(): Promise<void> {
  const jsm = await jetstreamManager(nc);
  await eventually(
    async () => {
      const info = await jsm.consumers.info(taskEventsStream(stack.namespace), `${stack.namespace}_notifications`);
      return info.num_pending === 0 && info.num_ack_pending === 0;
    },
    { what: "the notifications consumer to acknowledge every message" },
  );
}

const comment = (id: string, taskId: string, author: string, mentions: string[]) => ({
  id,
  task_id: taskId,
  author_id: author,
  body: mentions.map((m) => `<@${m}>`).join(" "),
  mention_ids: mentions,
  created_at: new Date().toISOString(),
  updated_at: new Date().toISOString(),
  edited_at: null,
});

describe("comment events", () => {
  it("when a comment mentions users and is edited to mention another, then each mentioned user is told once, the other followers `commented`, never the author, and a redelivery adds nothing", async () => {
    const t = await f.tenant();
    const [ann, bob, cat] = [await f.user(t.organizationId), await f.user(t.organizationId), await f.user(t.organizationId)];
    const made = await gw.post("/v1/tasks", { title: "discussed", assignee_ids: [bob.userId] }, auth(t));
    expect(made.status, made.text).toBe(201);
    const taskId = made.body.id as string;
    for (const u of [cat, ann]) expect((await gw.put(`/v1/tasks/${taskId}/followers/${u.userId}`, undefined, auth(t))).status).toBe(200);
    await eventually(async () => (await kinds(bob)).length === 1, { what: "bob's assignment" });

    // ann (a follower) comments, mentioning bob and herself.
    const created = await publish(t.organizationId, "comment.created", comment("cmt_1", taskId, ann.userId, [bob.userId, ann.userId]), ann.userId);
    await drained();
    expect(await kinds(bob)).toEqual(["assigned:-:" + t.userId, `mentioned:cmt_1:${ann.userId}`].sort());
    expect(await kinds(t)).toEqual([`commented:cmt_1:${ann.userId}`]);
    expect(await kinds(cat)).toEqual([`commented:cmt_1:${ann.userId}`]);
    expect(await kinds(ann)).toEqual([]);

    // The edit adds cat: only she is told of a mention; bob already was; followers are not told again.
    await publish(t.organizationId, "comment.updated", comment("cmt_1", taskId, ann.userId, [bob.userId, cat.userId]), ann.userId);
    // The first message again, as a redelivery after a lost ack would bring it.
    await publish(t.organizationId, "comment.created", comment("cmt_1", taskId, ann.userId, [bob.userId, ann.userId]), ann.userId, created);
    await publish(t.organizationId, "comment.deleted", { id: "cmt_1", task_id: taskId }, ann.userId);
    await drained();
    expect(await kinds(cat)).toEqual([`commented:cmt_1:${ann.userId}`, `mentioned:cmt_1:${ann.userId}`].sort());
    expect(await kinds(bob)).toHaveLength(2);
    expect(await kinds(t)).toHaveLength(1);
    expect((await gw.get("/v1/notifications/unread-count", auth(cat))).body).toEqual({ count: 2 });
  });
});

describe("due-date events", () => {
  it("when a task comes due soon or passes its due date, then its assignees are told, or its owner when it has none, with actor null", async () => {
    const t = await f.tenant();
    const bob = await f.user(t.organizationId);
    const withBob = await gw.post("/v1/tasks", { title: "due", assignee_ids: [bob.userId] }, auth(t));
    const alone = await gw.post("/v1/tasks", { title: "alone" }, auth(t));
    await publish(t.organizationId, "task.due_soon", withBob.body, null);
    await publish(t.organizationId, "task.overdue", alone.body, null);
    await drained();
    expect(await kinds(bob)).toEqual([`assigned:-:${t.userId}`, "due_soon:-:-"].sort());
    expect(await kinds(t)).toEqual(["overdue:-:-"]);
  });
});

describe("erased tasks", () => {
  it("when an event of a task comes after its erasure (delivered again, or late), then it makes no notification of the task again", async () => {
    const t = await f.tenant();
    const bob = await f.user(t.organizationId);
    const made = await gw.post("/v1/tasks", { title: "to be erased", assignee_ids: [bob.userId] }, auth(t));
    const taskId = made.body.id as string;
    await eventually(async () => (await kinds(bob)).length === 1, { what: "bob's assignment" });
    await publish(t.organizationId, "task.purged", { id: taskId }, t.userId);
    await drained();
    expect(await kinds(bob)).toEqual([]);
    await publish(t.organizationId, "comment.created", comment("cmt_late", taskId, t.userId, [bob.userId]), t.userId);
    await drained();
    expect(await kinds(bob)).toEqual([]);
    expect((await gw.get("/v1/notifications/unread-count", auth(bob))).body).toEqual({ count: 0 });
  });

  it("when a notification of a task was committed just after the task's erasure took its notifications, then the next pass over recent erasures takes it", async () => {
    const t = await f.tenant();
    const bob = await f.user(t.organizationId);
    await publish(t.organizationId, "task.purged", { id: "T-1" }, t.userId);
    await drained();
    // What an event's statement, begun before the erasure was recorded, leaves behind.
    await db`insert into notifications.notifications (id, organization_id, user_id, type, task_id, actor_id, event_id, created_at)
      values (${`ntf_${randomUUID()}`}, ${t.organizationId}, ${bob.userId}, 'assigned', 'T-1', ${t.userId}, ${`evt_${randomUUID()}`}, now())`;
    expect(await kinds(bob)).toHaveLength(1);
    const own = createDb({ url: stack.databaseUrl, schema: "notifications", max: 2 });
    try {
      const log = createLogger({ service: "erased-test", level: "silent" });
      const ingest = ingestSystem(notificationsResources(own, { log, tasks: { followers: async () => [] } }));
      expect(await ingest.forgetStragglers(120)).toBeGreaterThanOrEqual(1);
    } finally {
      await own.end({ timeout: 1 });
    }
    expect(await kinds(bob)).toEqual([]);
  });
});
