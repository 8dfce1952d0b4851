import { Notification, page, taskEventsStream, UnreadCount } from "@tasksvc/contracts";
import { connectNats, jetstreamManager, type NatsConnection } from "@tasksvc/nats";
import { bodyOf, e2eContext, eventually, type Tenant } from "@tasksvc/testing";
import { afterAll, describe, expect, it } from "vitest";

// Every recipient rule of the inbox with the real producers: tasks created and changed, comments
// written and edited, followers followed and unfollowed, all through the gateway; then, once the
// organization's events are all in the stream and the notifications consumer has acknowledged
// them, each user's whole inbox is compared, so a notification too many shows as well as one
// missing. The due-date rules, which need a short due-date tick, are in notification-due-rules.
const { stack, gw, f, db } = e2eContext();
let nc: NatsConnection | undefined;
afterAll(async () => {
  await nc?.drain();
});

type Key = Pick<Tenant, "apiKey">;
type User = Key & { userId: string };
const auth = (k: Key) => ({ token: k.apiKey });

async function createTask(k: Key, body: Record<string, unknown>): Promise<string> {
  const r = await gw.post("/v1/tasks", { title: "notify", ...body }, auth(k));
  expect(r.status, r.text).toBe(201);
  return r.body.id as string;
}
async function patchTask(k: Key, task: string, body: Record<string, unknown>): Promise<void> {
  const r = await gw.patch(`/v1/tasks/${task}`, body, auth(k));
  expect(r.status, r.text).toBe(200);
}
async function comment(k: Key, task: string, body: string): Promise<string> {
  const r = await gw.post(`/v1/tasks/${task}/comments`, { body }, auth(k));
  expect(r.status, r.text).toBe(201);
  return r.body.id as string;
}
async function editComment(k: Key, task: string, id: string, body: string): Promise<void> {
  const r = await gw.patch(`/v1/tasks/${task}/comments/${id}`, { body }, auth(k));
  expect(r.status, r.text).toBe(200);
}
const mention = (...users: User[]) => users.map((u) => `<@${u.userId}>`).join(" ");

/** The id of the organization's event of `type` whose data has id `dataId`, from the feed. */
async function eventId(k: Key, type: string, dataId: string, nth = 0): Promise<string> {
  const r = await gw.get(`/v1/events?type=${type}&limit=100`, auth(k));
  expect(r.status, r.text).toBe(200);
  // The feed is newest first: the oldest matching one is nth 0.
  const ids = (r.body.data as Array<{ id: string; data: { id: string } }>).filter((e) => e.data.id === dataId).map((e) => e.id);
  const id = ids.reverse()[nth];
  if (id === undefined) throw new Error(`no ${type} #${nth} for ${dataId} in the feed`);
  return id;
}

/**
 * Every event of the organization handled: its outbox empty (so each is in the stream), then the
 * consumer's ack floor at the stream's last message, which the consumer passes only once it has
 * written and acknowledged everything before it.
 */
async function settled(orgId: string): Promise<void> {
  await eventually(async () => (await db<{ n: number }[]>`select count(*)::int as n from tasks.outbox where organization_id = ${orgId}`)[0]?.n === 0, {
    what: "the organization's outbox to drain",
  });
  nc ??= await connectNats({ url: stack.natsUrl, name: "test-notification-rules" });
  const jsm = await jetstreamManager(nc);
  const stream = taskEventsStream(stack.namespace);
  const last = (await jsm.streams.info(stream)).state.last_seq;
  await eventually(async () => (await jsm.consumers.info(stream, `${stack.namespace}_notifications`)).ack_floor.stream_seq >= last, {
    what: "the notifications consumer to acknowledge every event so far",
    timeoutMs: 30_000,
  });
}

async function inbox(k: Key): Promise<Notification[]> {
  const r = await gw.get("/v1/notifications?limit=100", auth(k));
  expect(r.status, r.text).toBe(200);
  return bodyOf(r, page(Notification)).data;
}
/** A notification as `type task comment actor event`, "-" for null. */
const line = (n: Pick<Notification, "type" | "task_id" | "comment_id" | "actor_id" | "event_id">) =>
  [n.type, n.task_id, n.comment_id ?? "-", n.actor_id ?? "-", n.event_id].join(" ");

/** The user's whole inbox, once settled, is exactly `expected` (in any order), and the unread count says so. */
async function expectInbox(k: Key, expected: string[]): Promise<Notification[]> {
  const got = await inbox(k);
  expect(got.map(line).sort()).toEqual([...expected].sort());
  const count = await gw.get("/v1/notifications/unread-count", auth(k));
  expect(bodyOf(count, UnreadCount).count).toBe(expected.length);
  return got;
}

/** A tenant (its owner `t`) and `n` more members, each with their own key. */
async function team(n: number) {
  const t = await f.tenant();
  const owner: User = { apiKey: t.apiKey, userId: t.userId };
  const members: User[] = [];
  for (let i = 0; i < n; i++) members.push(await f.user(t.organizationId));
  return { t, owner, members };
}

describe("assigned", () => {
  it("when a member creates a task with assignees, themself among them, then each other assignee is told once with the member as actor, and the member nothing", async () => {
    const { t, owner, members } = await team(2);
    const [ann, bob] = members as [User, User];
    const task = await createTask(ann, { assignee_ids: [ann.userId, bob.userId, owner.userId] });
    await settled(t.organizationId);
    const created = await eventId(t, "task.created", task);
    const told = `assigned ${task} - ${ann.userId} ${created}`;
    await expectInbox(bob, [told]);
    await expectInbox(owner, [told]);
    await expectInbox(ann, []);
  });

  it("when a PATCH adds assignees, then only the newly added are told, never the member who adds themself, and a change of anything else tells nobody", async () => {
    const { t, owner, members } = await team(3);
    const [ann, bob, cat] = members as [User, User, User];
    const task = await createTask(owner, { assignee_ids: [ann.userId] });
    await patchTask(bob, task, { assignee_ids: [ann.userId, bob.userId, cat.userId] });
    await patchTask(bob, task, { title: "renamed", assignee_ids: [cat.userId, ann.userId, bob.userId] });
    await settled(t.organizationId);
    const created = await eventId(t, "task.created", task);
    const added = await eventId(t, "task.updated", task, 0);
    await expectInbox(ann, [`assigned ${task} - ${owner.userId} ${created}`]);
    await expectInbox(cat, [`assigned ${task} - ${bob.userId} ${added}`]);
    await expectInbox(bob, []);
    await expectInbox(owner, []);
  });
});

describe("mentioned", () => {
  it("when a comment mentions members, then each mentioned member is told `mentioned` once, never the author who mentions themself", async () => {
    const { t, owner, members } = await team(3);
    const [ann, bob, cat] = members as [User, User, User];
    const task = await createTask(owner, {});
    // Bob twice in one body is one mention.
    const c = await comment(ann, task, `${mention(bob, cat, ann)} and again ${mention(bob)}`);
    await settled(t.organizationId);
    const created = await eventId(t, "comment.created", c);
    for (const who of [bob, cat]) await expectInbox(who, [`mentioned ${task} ${c} ${ann.userId} ${created}`]);
    await expectInbox(ann, []);
    // The owner follows the task and is not mentioned: told of the comment.
    await expectInbox(owner, [`commented ${task} ${c} ${ann.userId} ${created}`]);
  });

  it("when an edit mentions a new user, then only that user is told; those mentioned before, even if dropped and mentioned again, and the followers are not told again", async () => {
    const { t, owner, members } = await team(3);
    const [ann, bob, cat] = members as [User, User, User];
    const task = await createTask(owner, {});
    const c = await comment(ann, task, `first ${mention(bob)}`);
    // A mention is told by whichever event naming it comes first: settled, that is the creation.
    await settled(t.organizationId);
    await editComment(ann, task, c, "bob dropped");
    await editComment(ann, task, c, `back ${mention(bob, cat)}`);
    await settled(t.organizationId);
    const created = await eventId(t, "comment.created", c);
    const [, second] = [await eventId(t, "comment.updated", c, 0), await eventId(t, "comment.updated", c, 1)];
    await expectInbox(bob, [`mentioned ${task} ${c} ${ann.userId} ${created}`]);
    await expectInbox(cat, [`mentioned ${task} ${c} ${ann.userId} ${second}`]);
    await expectInbox(owner, [`commented ${task} ${c} ${ann.userId} ${created}`]);
    await expectInbox(ann, []);
  });
});

describe("commented", () => {
  it("when a comment is written, then each follower not mentioned is told `commented`, a mentioned follower only `mentioned`, the author and a user who unfollowed nothing", async () => {
    const { t, owner, members } = await team(5);
    const [ann, bob, cat, dan, eve] = members as [User, User, User, User, User];
    // owner (owner), bob (assignee), cat and dan (manual) follow; dan then unfollows; eve never follows.
    const task = await createTask(owner, { assignee_ids: [bob.userId] });
    for (const u of [cat, dan]) expect((await gw.put(`/v1/tasks/${task}/followers/me`, undefined, auth(u))).status).toBe(200);
    expect((await gw.delete(`/v1/tasks/${task}/followers/me`, auth(dan))).status).toBe(200);
    const c = await comment(ann, task, `over to ${mention(cat)}`);
    await settled(t.organizationId);
    const [created, taskCreated] = [await eventId(t, "comment.created", c), await eventId(t, "task.created", task)];
    const said = `commented ${task} ${c} ${ann.userId} ${created}`;
    await expectInbox(owner, [said]);
    await expectInbox(bob, [`assigned ${task} - ${owner.userId} ${taskCreated}`, said]);
    await expectInbox(cat, [`mentioned ${task} ${c} ${ann.userId} ${created}`]);
    for (const u of [ann, dan, eve]) await expectInbox(u, []);
  });

  it("when the author comments again, or a user who unfollowed is mentioned and the next comment comes, then the author hears nothing and the unfollowed user only the mention", async () => {
    const { t, owner, members } = await team(2);
    const [ann, dan] = members as [User, User];
    const task = await createTask(owner, {});
    expect((await gw.put(`/v1/tasks/${task}/followers/me`, undefined, auth(dan))).status).toBe(200);
    expect((await gw.delete(`/v1/tasks/${task}/followers/me`, auth(dan))).status).toBe(200);
    // ann follows by commenting; dan, mentioned, is told but does not follow again.
    const first = await comment(ann, task, `asking ${mention(dan)}`);
    const second = await comment(ann, task, "and a follow-up");
    const byOwner = await comment(owner, task, "answered");
    await settled(t.organizationId);
    const [e1, e2, e3] = [
      await eventId(t, "comment.created", first),
      await eventId(t, "comment.created", second),
      await eventId(t, "comment.created", byOwner),
    ];
    await expectInbox(dan, [`mentioned ${task} ${first} ${ann.userId} ${e1}`]);
    await expectInbox(owner, [`commented ${task} ${first} ${ann.userId} ${e1}`, `commented ${task} ${second} ${ann.userId} ${e2}`]);
    await expectInbox(ann, [`commented ${task} ${byOwner} ${owner.userId} ${e3}`]);
  });
});

describe("one per user per event, readable through the routes", () => {
  it("when several rules and writes reach the same users, then once settled each has one notification per event and type, arriving as the writes go, readable one by one and all at once", async () => {
    const { t, owner, members } = await team(3);
    const [ann, bob, cat] = members as [User, User, User];
    const task = await createTask(owner, { assignee_ids: [ann.userId, bob.userId] });
    // Ann's first notification is readable while the rest are still being written.
    const [first] = await eventually(
      async () => {
        const got = await inbox(ann);
        if (got.length === 0) throw new Error("nothing yet");
        return got;
      },
      { what: "ann's assignment to be readable" },
    );
    expect(first?.type).toBe("assigned");
    const c = await comment(bob, task, `${mention(ann, cat)} please look`);
    await settled(t.organizationId);
    await editComment(bob, task, c, `${mention(ann, cat)} please look again`);
    await patchTask(owner, task, { assignee_ids: [ann.userId, bob.userId, cat.userId] });
    await settled(t.organizationId);
    const [created, commented, updated] = [
      await eventId(t, "task.created", task),
      await eventId(t, "comment.created", c),
      await eventId(t, "task.updated", task),
    ];
    const notes = await expectInbox(ann, [`assigned ${task} - ${owner.userId} ${created}`, `mentioned ${task} ${c} ${bob.userId} ${commented}`]);
    await expectInbox(cat, [`mentioned ${task} ${c} ${bob.userId} ${commented}`, `assigned ${task} - ${owner.userId} ${updated}`]);
    await expectInbox(bob, [`assigned ${task} - ${owner.userId} ${created}`]);
    // The owner follows and is not mentioned: the comment, and not the assignment they made.
    await expectInbox(owner, [`commented ${task} ${c} ${bob.userId} ${commented}`]);
    const unique = new Set(notes.map((n) => `${n.event_id} ${n.type}`));
    expect(unique.size).toBe(notes.length);

    const one = notes[0] as Notification;
    const read = await gw.post(`/v1/notifications/${one.id}/read`, undefined, auth(ann));
    expect(read.status, read.text).toBe(200);
    expect(bodyOf(read, Notification)).toEqual({ ...one, read_at: expect.any(String) });
    expect(bodyOf(await gw.get("/v1/notifications/unread-count", auth(ann)), UnreadCount).count).toBe(1);
    const all = await gw.post("/v1/notifications/read-all", {}, auth(cat));
    expect(all.body, all.text).toEqual({ marked_count: 2 });
    expect((await gw.get("/v1/notifications?unread=true", auth(cat))).body.data).toEqual([]);
  });
});
