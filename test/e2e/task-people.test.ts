import { e2eContext, pointersOf, type Tenant } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";

// Owners, assignees and followers of tasks, through the gateway: who may be assigned, what a
// change of assignees writes, who follows a task and when they stop.
const { gw, gw2, f, events, db } = e2eContext();

type Caller = Pick<Tenant, "apiKey">;
const create = (t: Caller, body: Record<string, unknown>) => gw.post("/v1/tasks", body, { token: t.apiKey });
const patch = (t: Caller, id: string, body: Record<string, unknown>) => gw.patch(`/v1/tasks/${id}`, body, { token: t.apiKey });
const followersOf = async (t: Caller, id: string) => {
  const r = await gw.get(`/v1/tasks/${id}/followers`, { token: t.apiKey });
  expect(r.status, r.text).toBe(200);
  return (r.body.data as Array<{ user_id: string; reason: string }>).map((x) => [x.user_id, x.reason]);
};
const taskCount = async (orgId: string) => Number((await db`select count(*)::int as n from tasks.tasks where organization_id = ${orgId}`)[0]?.["n"]);

describe("assignees on tasks", () => {
  it("when a task is created with assignees, then it shows its owner and them in order, in history too, and each follows it", async () => {
    const t = await f.tenant();
    const [ann, bob] = [await f.user(t.organizationId), await f.user(t.organizationId)];
    const r = await create(t, { title: "ship it", assignee_ids: [bob.userId, ann.userId] });
    expect(r.status, r.text).toBe(201);
    expect(r.body).toMatchObject({ owner_id: t.userId, assignee_ids: [bob.userId, ann.userId] });
    const keys = Object.keys(r.body);
    expect(keys.slice(keys.indexOf("project_ids"), keys.indexOf("project_ids") + 3)).toEqual(["project_ids", "owner_id", "assignee_ids"]);
    const history = await gw.get(`/v1/tasks/${r.body.id}/history`, { token: t.apiKey });
    expect(history.body.data[0]).toMatchObject({ owner_id: t.userId, assignee_ids: [bob.userId, ann.userId] });
    // Followed in one statement, so at one time: oldest first, ties by user id.
    const byUser = (a: string[], b: string[]) => String(a[0]).localeCompare(String(b[0]));
    expect((await followersOf(t, r.body.id)).sort(byUser)).toEqual(
      [
        [t.userId, "owner"],
        [ann.userId, "assignee"],
        [bob.userId, "assignee"],
      ].sort(byUser),
    );
    // Without assignees: an empty list, and the owner alone follows.
    const plain = await create(t, { title: "alone" });
    expect(plain.body.assignee_ids).toEqual([]);
    expect(await followersOf(t, plain.body.id)).toEqual([[t.userId, "owner"]]);
  });

  it("when an assignee is not a member (another organization's user, a made-up id, a former member), then 400 at its pointer and nothing is written", async () => {
    const t = await f.tenant();
    const other = await f.tenant();
    const gone = await f.user(t.organizationId);
    await f.admin("removeMember", { org: t.organizationId, user: gone.userId });
    const before = await taskCount(t.organizationId);
    for (const [ids, at] of [
      [[t.userId, other.userId], 1],
      [["usr_doesnotexist"], 0],
      [[t.userId, t.userId.slice(0, -1), gone.userId], 1],
    ] as const) {
      const r = await create(t, { title: "x", assignee_ids: ids });
      expect(r.status, r.text).toBe(400);
      expect(pointersOf(r.body)).toEqual([`/assignee_ids/${at}`]);
    }
    const twice = await create(t, { title: "x", assignee_ids: [t.userId, t.userId] });
    expect(twice.status).toBe(400);
    const many = await create(t, { title: "x", assignee_ids: Array.from({ length: 11 }, (_, i) => `usr_${i}`) });
    expect(many.status).toBe(400);
    expect(pointersOf(many.body)).toEqual(["/assignee_ids"]);
    expect(await taskCount(t.organizationId)).toBe(before);
  });

  it("when an assignee was accepted moments ago and then leaves the organization, then the next write naming them is 400 on every replica", async () => {
    const t = await f.tenant();
    const leaver = await f.user(t.organizationId);
    // Enough writes through both gateways that every tasks replica has confirmed the membership.
    for (let i = 0; i < 8; i++) {
      const r = await (i % 2 ? gw2 : gw).post("/v1/tasks", { title: `with ${i}`, assignee_ids: [leaver.userId] }, { token: t.apiKey });
      expect(r.status, r.text).toBe(201);
    }
    const removed = await gw.delete(`/v1/members/${leaver.userId}`, { token: t.apiKey });
    expect(removed.status, removed.text).toBe(200);
    const before = await taskCount(t.organizationId);
    for (let i = 0; i < 8; i++) {
      const r = await (i % 2 ? gw2 : gw).post("/v1/tasks", { title: `after ${i}`, assignee_ids: [leaver.userId] }, { token: t.apiKey });
      expect(r.status, r.text).toBe(400);
      expect(pointersOf(r.body)).toEqual(["/assignee_ids/0"]);
    }
    expect(await taskCount(t.organizationId)).toBe(before);
  });

  it("when assignees change, then a new version with changes.assignee_ids in task.updated; the same list again writes nothing; a newly assigned member follows", async () => {
    const t = await f.tenant();
    const ann = await f.user(t.organizationId);
    const made = (await create(t, { title: "review" })).body;
    const mark = await events.mark();
    const r = await patch(t, made.id, { assignee_ids: [ann.userId] });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ version: 2, assignee_ids: [ann.userId], owner_id: t.userId });
    const [updated] = await events.await(mark, t.organizationId, 1);
    expect(updated?.type).toBe("task.updated");
    expect(updated?.changes).toEqual({ version: { from: 1, to: 2 }, assignee_ids: { from: [], to: [ann.userId] }, updated_at: expect.anything() });
    const same = await patch(t, made.id, { assignee_ids: [ann.userId] });
    expect(same.body.version).toBe(2);
    expect(await followersOf(t, made.id)).toEqual([
      [t.userId, "owner"],
      [ann.userId, "assignee"],
    ]);
    // A bad id in a PATCH changes nothing either.
    const bad = await patch(t, made.id, { title: "renamed", assignee_ids: ["usr_nobody"] });
    expect(pointersOf(bad.body)).toEqual(["/assignee_ids/0"]);
    expect((await gw.get(`/v1/tasks/${made.id}`, { token: t.apiKey })).body).toMatchObject({ title: "review", version: 2 });
    // Unassigned: an empty list is a change too.
    expect((await patch(t, made.id, { assignee_ids: [] })).body).toMatchObject({ version: 3, assignee_ids: [] });
  });

  it("when a batch item names a user who is not a member, then that item is 400 at its pointer and the others are applied", async () => {
    const t = await f.tenant();
    const ann = await f.user(t.organizationId);
    const r = await gw.post(
      "/v1/tasks/batch",
      {
        operations: [
          { method: "create", body: { title: "ok", assignee_ids: [ann.userId] } },
          { method: "create", body: { title: "no", assignee_ids: ["usr_x"] } },
        ],
      },
      { token: t.apiKey, headers: { "idempotency-key": `batch-${Date.now()}` } },
    );
    expect(r.status, r.text).toBe(200);
    expect(r.body.results[0]).toMatchObject({ status: 201, body: { assignee_ids: [ann.userId] } });
    expect(r.body.results[1].status).toBe(400);
    expect(JSON.stringify(r.body.results[1])).toContain("/assignee_ids/0");
  });
});

describe("followers", () => {
  it("when a member follows, follows again and unfollows (by id or as me), then 200 each time and the list follows; an automatic follow never brings them back", async () => {
    const t = await f.tenant();
    const ann = await f.user(t.organizationId);
    const task = (await create(t, { title: "watch me" })).body;
    const put = await gw.put(`/v1/tasks/${task.id}/followers/${ann.userId}`, undefined, { token: t.apiKey });
    expect(put.status, put.text).toBe(200);
    expect(put.body).toEqual({ user_id: ann.userId, reason: "manual", created_at: expect.any(String) });
    const again = await gw2.put(`/v1/tasks/${task.id}/followers/${ann.userId}`, undefined, { token: t.apiKey });
    expect(again.body).toEqual(put.body);
    // The owner's own row keeps its reason when they follow "again".
    expect((await gw.put(`/v1/tasks/${task.id}/followers/me`, undefined, { token: t.apiKey })).body).toMatchObject({ user_id: t.userId, reason: "owner" });
    const off = await gw.delete(`/v1/tasks/${task.id}/followers/me`, { token: ann.apiKey });
    expect(off.status, off.text).toBe(200);
    expect(off.body).toEqual({ user_id: ann.userId });
    expect(await followersOf(t, task.id)).toEqual([[t.userId, "owner"]]);
    // Assigned later, ann does not follow again on her own; the version still changes.
    expect((await patch(t, task.id, { assignee_ids: [ann.userId] })).body.version).toBe(2);
    expect(await followersOf(t, task.id)).toEqual([[t.userId, "owner"]]);
    // Following by hand brings her back, as manual.
    expect((await gw.put(`/v1/tasks/${task.id}/followers/me`, undefined, { token: ann.apiKey })).body).toMatchObject({ reason: "manual" });
    // Following changes no version and no ETag.
    const got = await gw.get(`/v1/tasks/${task.id}`, { token: t.apiKey });
    expect(got.body.version).toBe(2);
    expect(got.headers.get("etag")).toBe('"2"');
  });

  it("when the user is not a member or the task is another organization's, then 404 on every follower route, never an oracle", async () => {
    const t = await f.tenant();
    const other = await f.tenant();
    const mine = (await create(t, { title: "mine" })).body;
    const theirs = (await create(other, { title: "theirs" })).body;
    for (const [method, path] of [
      ["put", `/v1/tasks/${mine.id}/followers/${other.userId}`],
      ["delete", `/v1/tasks/${mine.id}/followers/${other.userId}`],
      ["put", `/v1/tasks/${mine.id}/followers/usr_nobody`],
      ["put", `/v1/tasks/T-999999/followers/me`],
      ["get", `/v1/tasks/T-999999/followers`],
    ] as const) {
      const r =
        method === "get"
          ? await gw.get(path, { token: t.apiKey })
          : method === "put"
            ? await gw.put(path, undefined, { token: t.apiKey })
            : await gw.delete(path, { token: t.apiKey });
      expect(r.status, `${method} ${path}: ${r.text}`).toBe(404);
      expect(r.body.code).toBe("resource_not_found");
    }
    // Another organization's task with the same number as one of ours reads ours, never theirs.
    const r = await gw.get(`/v1/tasks/${theirs.id}/followers`, { token: t.apiKey });
    if (theirs.id === mine.id) expect(r.body.data).toEqual([{ user_id: t.userId, reason: "owner", created_at: expect.any(String) }]);
    else expect(r.status).toBe(404);
    const readOnly = await f.token(t.organizationId, t.userId, ["tasks:read"]);
    expect((await gw.put(`/v1/tasks/${mine.id}/followers/me`, undefined, { token: readOnly })).status).toBe(403);
  });
});

describe("finding tasks by people", () => {
  it("when listed by assignee_id (me, none, ids, mixed) and owner_id, or searched with assignee_ids and owner_id, then exactly the matching tasks", async () => {
    const t = await f.tenant();
    const ann = await f.user(t.organizationId);
    const mk = async (title: string, assignees: string[], as: { apiKey: string } = t) =>
      (await gw.post("/v1/tasks", { title, assignee_ids: assignees }, { token: as.apiKey })).body.id as string;
    const mine = await mk("mine", [t.userId]);
    const both = await mk("both", [ann.userId, t.userId]);
    const hers = await mk("hers", [ann.userId]);
    const nobody = await mk("nobody", []);
    const annOwns = await mk("ann owns", [], ann);
    const list = async (query: string, as: Caller = t) => {
      const r = await gw.get(`/v1/tasks?${query}`, { token: as.apiKey });
      expect(r.status, r.text).toBe(200);
      return (r.body.data as Array<{ id: string }>).map((x) => x.id).sort();
    };
    expect(await list("assignee_id=me")).toEqual([mine, both].sort());
    expect(await list("assignee_id=me", ann)).toEqual([both, hers].sort());
    expect(await list("assignee_id=none")).toEqual([nobody, annOwns].sort());
    expect(await list(`assignee_id=none,${ann.userId}`)).toEqual([both, hers, nobody, annOwns].sort());
    expect(await list(`assignee_id=me&assignee_id=${ann.userId}`)).toEqual([mine, both, hers].sort());
    expect(await list("owner_id=me", ann)).toEqual([annOwns]);
    expect(await list(`owner_id=${t.userId}&assignee_id=none`)).toEqual([nobody]);
    expect((await gw.get("/v1/tasks?assignee_id=", { token: t.apiKey })).status).toBe(400);
    const search = async (filter: unknown, as: Caller = t) => {
      const r = await gw.post("/v1/tasks/search", { filter }, { token: as.apiKey });
      expect(r.status, r.text).toBe(200);
      return (r.body.data as Array<{ id: string }>).map((x) => x.id).sort();
    };
    expect(await search({ field: "assignee_ids", op: "contains", value: "me" }, ann)).toEqual([both, hers].sort());
    expect(await search({ field: "assignee_ids", op: "in", value: [ann.userId, "me"] })).toEqual([mine, both, hers].sort());
    expect(await search({ field: "assignee_ids", op: "is_null", value: true })).toEqual([nobody, annOwns].sort());
    expect(await search({ not: { field: "assignee_ids", op: "contains", value: ann.userId } })).toEqual([mine, nobody, annOwns].sort());
    expect(await search({ field: "owner_id", op: "neq", value: "me" })).toEqual([annOwns]);
    expect(await search({ field: "owner_id", op: "in", value: ["me", ann.userId] })).toHaveLength(5);
    expect(await search({ field: "owner_id", op: "nin", value: [ann.userId] })).toEqual([mine, both, hers, nobody].sort());
    const bad = await gw.post("/v1/tasks/search", { filter: { field: "assignee_ids", op: "eq", value: "me" } }, { token: t.apiKey });
    expect(pointersOf(bad.body)).toEqual(["/filter/op"]);
  });
});

describe("the daily board and people", () => {
  it("when an assignee plans a task they do not own, then it is placed; a member neither owner nor assignee is refused at /task_id", async () => {
    const t = await f.tenant();
    const [ann, bob] = [await f.user(t.organizationId), await f.user(t.organizationId)];
    const task = (await create(t, { title: "pair on it", assignee_ids: [ann.userId] })).body;
    const date = new Date().toISOString().slice(0, 10);
    const placed = await gw.post("/v1/daily-plan/entries", { task_id: task.id, date, section: "TODO" }, { token: ann.apiKey });
    expect(placed.status, placed.text).toBe(201);
    const refused = await gw.post("/v1/daily-plan/entries", { task_id: task.id, date, section: "TODO" }, { token: bob.apiKey });
    expect(refused.status, refused.text).toBe(400);
    expect(pointersOf(refused.body)).toEqual(["/task_id"]);
  });
});
