import { Notification, page, UnreadCount } from "@tasksvc/contracts";
import { bodyOf, e2eContext, eventually, pointersOf, type Tenant } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";

// The inbox through the gateway: notifications made from task events by the notifications
// service (assigned on a create and on a change of assignees, never to the user who acted), the
// list's pages and unread filter, the unread count, reading one and reading all, and that nobody
// reads another user's or another organization's notifications.
const { gw, f } = e2eContext();

type Key = Pick<Tenant, "apiKey">;
type Note = Notification;
const auth = (k: Key) => ({ token: k.apiKey });

async function createTask(t: Key, body: Record<string, unknown>): Promise<string> {
  const r = await gw.post("/v1/tasks", body, auth(t));
  expect(r.status, r.text).toBe(201);
  return r.body.id as string;
}

async function inbox(k: Key, query = ""): Promise<{ data: Note[]; has_more: boolean; next_cursor: string | null }> {
  const r = await gw.get(`/v1/notifications${query}`, auth(k));
  expect(r.status, r.text).toBe(200);
  return bodyOf(r, page(Notification));
}

async function unread(k: Key): Promise<number> {
  const r = await gw.get("/v1/notifications/unread-count", auth(k));
  expect(r.status, r.text).toBe(200);
  return bodyOf(r, UnreadCount).count;
}

/** Polls until the user's inbox holds `n` notifications (the consumer writes them shortly after the event). */
const inboxOf = (k: Key, n: number, what: string) =>
  eventually(
    async () => {
      const got = await inbox(k, "?limit=100");
      if (got.data.length !== n) throw new Error(`${got.data.length} of ${n}: ${JSON.stringify(got.data)}`);
      return got.data;
    },
    { what },
  );

describe("assigned", () => {
  it("when a task is created with assignees, then each assignee is told `assigned` once, and the creator, though assigned, is not", async () => {
    const t = await f.tenant();
    const [ann, bob] = [await f.user(t.organizationId), await f.user(t.organizationId)];
    const id = await createTask(t, { title: "ship it", assignee_ids: [ann.userId, t.userId, bob.userId] });
    const event = (await gw.get(`/v1/events?task_id=${id}&type=task.created`, auth(t))).body.data[0];
    for (const who of [ann, bob]) {
      const [n] = await inboxOf(who, 1, "the assignee's notification");
      expect(n).toEqual({
        id: expect.stringMatching(/^ntf_/),
        type: "assigned",
        task_id: id,
        comment_id: null,
        actor_id: t.userId,
        event_id: event.id,
        created_at: event.timestamp,
        read_at: null,
      });
      expect(Object.keys(n ?? {})).toEqual(["id", "type", "task_id", "comment_id", "actor_id", "event_id", "created_at", "read_at"]);
    }
    // One statement wrote the event's notifications, so the assignees' are there and the creator's never will be.
    expect((await inbox(t)).data).toEqual([]);
    expect(await unread(t)).toBe(0);
  });

  it("when a task's assignees change, then only the newly assigned are told, with the update's event", async () => {
    const t = await f.tenant();
    const [ann, bob, cat] = [await f.user(t.organizationId), await f.user(t.organizationId), await f.user(t.organizationId)];
    const id = await createTask(t, { title: "review", assignee_ids: [ann.userId] });
    await inboxOf(ann, 1, "ann's first notification");
    const r = await gw.patch(`/v1/tasks/${id}`, { assignee_ids: [bob.userId, ann.userId, cat.userId] }, auth(t));
    expect(r.status, r.text).toBe(200);
    const update = (await gw.get(`/v1/events?task_id=${id}&type=task.updated`, auth(t))).body.data[0];
    for (const who of [bob, cat]) expect((await inboxOf(who, 1, "a new assignee's notification"))[0]).toMatchObject({ type: "assigned", event_id: update.id });
    // ann was assigned before: the update's statement told bob and cat and not her.
    expect((await inbox(ann)).data).toHaveLength(1);
    // A change that removes assignees or changes something else tells nobody; a later addition does.
    expect((await gw.patch(`/v1/tasks/${id}`, { title: "re-review", assignee_ids: [ann.userId] }, auth(t))).status).toBe(200);
    expect((await gw.patch(`/v1/tasks/${id}`, { assignee_ids: [ann.userId, bob.userId] }, auth(t))).status).toBe(200);
    await inboxOf(bob, 2, "bob's second notification");
    expect((await inbox(ann)).data).toHaveLength(1);
    expect((await inbox(cat)).data).toHaveLength(1);
  });
});

describe("the inbox", () => {
  /** A tenant whose member ann was assigned `n` tasks, one after the other; her notifications newest first. */
  async function annWith(n: number) {
    const t = await f.tenant();
    const ann = await f.user(t.organizationId);
    const tasks: string[] = [];
    for (let i = 0; i < n; i++) tasks.push(await createTask(t, { title: `task ${i}`, assignee_ids: [ann.userId] }));
    const notes = await inboxOf(ann, n, "ann's notifications");
    return { t, ann, tasks, notes };
  }

  it("when the list is paged, then it is newest first, every notification once, and `unread=true` leaves out read ones", async () => {
    const { ann, tasks, notes } = await annWith(5);
    expect(notes.map((n) => n.task_id)).toEqual([...tasks].reverse());
    const seen: Note[] = [];
    let after: string | null = null;
    do {
      const p = await inbox(ann, `?limit=2${after ? `&after=${encodeURIComponent(after)}` : ""}`);
      expect(p.data.length).toBeLessThanOrEqual(2);
      seen.push(...p.data);
      after = p.has_more ? p.next_cursor : null;
    } while (after);
    expect(seen.map((n) => n.id)).toEqual(notes.map((n) => n.id));
    // A cursor belongs to its query.
    const first = await inbox(ann, "?limit=2");
    const other = await gw.get(`/v1/notifications?limit=2&unread=true&after=${encodeURIComponent(first.next_cursor ?? "")}`, auth(ann));
    expect(other.status, other.text).toBe(400);

    const read = await gw.post(`/v1/notifications/${notes[1]?.id}/read`, undefined, auth(ann));
    expect(read.status, read.text).toBe(200);
    const onlyUnread = await inbox(ann, "?unread=true&limit=100");
    expect(onlyUnread.data.map((n) => n.id)).toEqual(notes.filter((_, i) => i !== 1).map((n) => n.id));
    expect((await inbox(ann, "?unread=false&limit=100")).data).toHaveLength(5);
  });

  it("when a notification is read, then it shows read_at and leaves the unread count; reading it again keeps the first read_at", async () => {
    const { ann, notes } = await annWith(3);
    expect(await unread(ann)).toBe(3);
    const target = notes[2]?.id ?? "";
    const first = await gw.post(`/v1/notifications/${target}/read`, undefined, auth(ann));
    expect(first.status, first.text).toBe(200);
    const marked = bodyOf(first, Notification);
    expect(marked).toMatchObject({ id: target, type: "assigned" });
    expect(marked.read_at).not.toBeNull();
    expect(await unread(ann)).toBe(2);
    const again = await gw.post(`/v1/notifications/${target}/read`, undefined, auth(ann));
    expect(again.status, again.text).toBe(200);
    expect(again.body).toEqual(marked);
    expect(await unread(ann)).toBe(2);
    expect((await inbox(ann, "?limit=100")).data.find((n) => n.id === target)?.read_at).toBe(marked.read_at);
  });

  it("when read-all names `before`, then only unread ones created strictly before it are marked; without it, every unread one; read ones are not counted", async () => {
    const { ann, notes } = await annWith(5);
    // Newest first: 0 and 1 are newer than notes[2]; notes[3] is read already.
    expect((await gw.post(`/v1/notifications/${notes[3]?.id}/read`, undefined, auth(ann))).status).toBe(200);
    const before = notes[2]?.created_at;
    const some = await gw.post("/v1/notifications/read-all", { before }, auth(ann));
    expect(some.status, some.text).toBe(200);
    expect(some.body).toEqual({ marked_count: 1 });
    expect((await inbox(ann, "?unread=true")).data.map((n) => n.id)).toEqual([notes[0]?.id, notes[1]?.id, notes[2]?.id]);
    expect(await unread(ann)).toBe(3);
    const rest = await gw.post("/v1/notifications/read-all", {}, auth(ann));
    expect(rest.body).toEqual({ marked_count: 3 });
    expect(await unread(ann)).toBe(0);
    // No body at all means the same; nothing is left to mark.
    const none = await gw.post("/v1/notifications/read-all", undefined, auth(ann));
    expect(none.status, none.text).toBe(200);
    expect(none.body).toEqual({ marked_count: 0 });
    expect((await inbox(ann, "?unread=true")).data).toEqual([]);
  });

  it("when the input is wrong, then 400 validation_failed at the field, and nothing is marked", async () => {
    const { ann } = await annWith(1);
    for (const [r, pointer] of [
      [await gw.get("/v1/notifications?unread=maybe", auth(ann)), "/unread"],
      [await gw.get("/v1/notifications?limit=0", auth(ann)), "/limit"],
      [await gw.post("/v1/notifications/read-all", { before: "yesterday" }, auth(ann)), "/before"],
      [await gw.post("/v1/notifications/read-all", { befor: "2026-01-01T00:00:00Z" }, auth(ann)), "/befor"],
    ] as const) {
      expect(r.status, r.text).toBe(400);
      expect(r.body.code).toBe("validation_failed");
      expect(pointersOf(r.body)).toEqual([pointer]);
    }
    expect(await unread(ann)).toBe(1);
  });
});

describe("whose notifications", () => {
  it("when another user of the organization, or anyone of another organization, reads a notification, then 404 like an unknown id, and it stays unread", async () => {
    const t = await f.tenant();
    const ann = await f.user(t.organizationId);
    const other = await f.tenant();
    await createTask(t, { title: "mine", assignee_ids: [ann.userId] });
    const [note] = await inboxOf(ann, 1, "ann's notification");
    for (const k of [t, other]) {
      const r = await gw.post(`/v1/notifications/${note?.id}/read`, undefined, auth(k));
      expect(r.status, r.text).toBe(404);
      expect(r.body.code).toBe("resource_not_found");
      expect((await inbox(k)).data).toEqual([]);
      expect(await unread(k)).toBe(0);
      expect((await gw.post("/v1/notifications/read-all", {}, auth(k))).body).toEqual({ marked_count: 0 });
    }
    const unknown = await gw.post("/v1/notifications/ntf_doesnotexist/read", undefined, auth(ann));
    expect(unknown.status, unknown.text).toBe(404);
    expect(await unread(ann)).toBe(1);
  });

  it("when a user of another organization is assigned there, then each organization's inbox shows only its own", async () => {
    const [a, b] = [await f.tenant(), await f.tenant()];
    const [annA, annB] = [await f.user(a.organizationId), await f.user(b.organizationId)];
    const inA = await createTask(a, { title: "in a", assignee_ids: [annA.userId] });
    const inB = await createTask(b, { title: "in b", assignee_ids: [annB.userId] });
    expect((await inboxOf(annA, 1, "a's notification")).map((n) => n.task_id)).toEqual([inA]);
    expect((await inboxOf(annB, 1, "b's notification")).map((n) => n.task_id)).toEqual([inB]);
  });
});
