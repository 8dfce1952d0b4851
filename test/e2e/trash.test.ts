import { e2eContext, eventually, type Tenant } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";

// The trash through the gateway: what DELETE answers, what goes with a task, what comes back on
// restore, the trash listing, the conditional deletes and the events each step writes.
const { gw, f, db } = e2eContext();

type Caller = Pick<Tenant, "apiKey">;
const as = (t: Caller, headers?: Record<string, string>) => ({ token: t.apiKey, ...(headers ? { headers } : {}) });
const newTask = async (t: Caller, body: Record<string, unknown>) => {
  const r = await gw.post("/v1/tasks", body, as(t));
  expect(r.status, r.text).toBe(201);
  return r.body as { id: string; version: number };
};
const trashIds = async (t: Caller) => {
  const r = await gw.get("/v1/trash?limit=100", as(t));
  expect(r.status, r.text).toBe(200);
  return (r.body.data as Array<{ id: string }>).map((i) => i.id);
};
const feed = async (t: Caller, type: string) => {
  const r = await gw.get(`/v1/events?type=${type}&limit=100`, as(t));
  expect(r.status, r.text).toBe(200);
  return r.body.data as Array<{ type: string; data: { id: string; version?: number; title?: string } }>;
};

describe("trash", () => {
  it("when a task with subtasks is deleted, then it and every subtask answer 404, leave lists and search, are listed in the trash each with a task.deleted, and the answer says when they go", async () => {
    const t = await f.tenant();
    const root = await newTask(t, { title: "root" });
    const child = await newTask(t, { title: "child", parent_task_id: root.id });
    const grandchild = await newTask(t, { title: "grandchild", parent_task_id: child.id });
    const other = await newTask(t, { title: "stays" });
    const before = Date.now();
    const r = await gw.delete(`/v1/tasks/${root.id}`, as(t));
    expect(r.status, r.text).toBe(200);
    expect(r.body).toEqual({ id: root.id, deleted_at: expect.any(String), purge_at: expect.any(String), deleted_by: t.userId });
    const deletedAt = Date.parse(r.body.deleted_at);
    expect(deletedAt).toBeGreaterThanOrEqual(before - 5_000);
    // 30 days by default.
    expect(Date.parse(r.body.purge_at) - deletedAt).toBe(30 * 24 * 3600_000);
    for (const id of [root.id, child.id, grandchild.id]) {
      const g = await gw.get(`/v1/tasks/${id}`, as(t));
      expect(g.status, g.text).toBe(404);
      expect(g.body.code).toBe("resource_not_found");
    }
    const list = await gw.get("/v1/tasks?limit=100", as(t));
    expect(list.body.data.map((x: { id: string }) => x.id)).toEqual([other.id]);
    const search = await gw.post("/v1/tasks/search", { filter: { field: "title", op: "contains", value: "child" } }, as(t));
    expect(search.status, search.text).toBe(200);
    expect(search.body.data).toEqual([]);
    expect(new Set(await trashIds(t))).toEqual(new Set([root.id, child.id, grandchild.id]));
    const items = (await gw.get("/v1/trash", as(t))).body.data;
    expect(items[0]).toEqual({
      id: expect.any(String),
      title: expect.any(String),
      deleted_at: r.body.deleted_at,
      purge_at: r.body.purge_at,
      deleted_by: t.userId,
    });
    const deleted = await eventually(async () => {
      const e = await feed(t, "task.deleted");
      return e.length === 3 ? e : false;
    });
    expect(new Set(deleted.map((e) => e.data.id))).toEqual(new Set([root.id, child.id, grandchild.id]));
    expect(deleted.find((e) => e.data.id === child.id)?.data).toMatchObject({ title: "child", parent_task_id: root.id });
    // The feed keeps the trashed task's events, and its task filter still names it.
    const own = await gw.get(`/v1/events?task_id=${child.id}`, as(t));
    expect(own.status, own.text).toBe(200);
    expect(own.body.data.map((e: { type: string }) => e.type)).toEqual(["task.deleted", "task.created"]);
    // Already in the trash: like any unknown task.
    const again = await gw.delete(`/v1/tasks/${root.id}`, as(t));
    expect(again.status, again.text).toBe(404);
  });

  it("when a trashed task is restored, then it and the subtasks deleted with it come back as new versions with task.restored, and a subtask deleted on its own before stays in the trash", async () => {
    const t = await f.tenant();
    const root = await newTask(t, { title: "root" });
    const a = await newTask(t, { title: "a", parent_task_id: root.id });
    const b = await newTask(t, { title: "b", parent_task_id: root.id });
    expect((await gw.delete(`/v1/tasks/${b.id}`, as(t))).status).toBe(200);
    expect((await gw.delete(`/v1/tasks/${root.id}`, as(t))).status).toBe(200);
    // b's parent is in the trash: restoring b alone would hang it under a task no read shows.
    const early = await gw.post(`/v1/tasks/${b.id}/restore`, undefined, as(t));
    expect(early.status, early.text).toBe(409);
    expect(early.body.code).toBe("parent_in_trash");
    const r = await gw.post(`/v1/tasks/${root.id}/restore`, undefined, as(t));
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ id: root.id, title: "root", version: 2 });
    expect(r.headers.get("etag")).toBe('"2"');
    const got = await gw.get(`/v1/tasks/${a.id}`, as(t));
    expect(got.status, got.text).toBe(200);
    expect(got.body).toMatchObject({ title: "a", parent_task_id: root.id, version: 2 });
    const history = await gw.get(`/v1/tasks/${a.id}/history`, as(t));
    expect(history.body.data.map((v: { version: number; title: string }) => [v.version, v.title])).toEqual([
      [2, "a"],
      [1, "a"],
    ]);
    expect(await trashIds(t)).toEqual([b.id]);
    expect((await gw.get(`/v1/tasks/${b.id}`, as(t))).status).toBe(404);
    const restored = await eventually(async () => {
      const e = await feed(t, "task.restored");
      return e.length === 2 ? e : false;
    });
    expect(new Set(restored.map((e) => [e.data.id, e.data.version].join()))).toEqual(new Set([`${root.id},2`, `${a.id},2`]));
    // Now its parent is back, b comes back on its own.
    const late = await gw.post(`/v1/tasks/${b.id}/restore`, undefined, as(t));
    expect(late.status, late.text).toBe(200);
    expect(late.body).toMatchObject({ id: b.id, parent_task_id: root.id });
    // A live task is not in the trash.
    expect((await gw.post(`/v1/tasks/${b.id}/restore`, undefined, as(t))).status).toBe(404);
  });

  it("when a trashed task comes back, then its links, comments, followers and board entries are as they were, and meanwhile its dependents do not count it", async () => {
    const t = await f.tenant();
    const member = await f.user(t.organizationId, "member");
    const blocker = await newTask(t, { title: "blocker", assignee_ids: [member.userId] });
    const blocked = await newTask(t, { title: "blocked" });
    expect((await gw.post(`/v1/tasks/${blocked.id}/dependencies`, { blocker_task_id: blocker.id }, as(t))).status).toBe(201);
    expect((await gw.post(`/v1/tasks/${blocker.id}/comments`, { body: "still here" }, as(t))).status).toBe(201);
    const plan = await gw.post("/v1/daily-plan/entries", { date: "2026-11-23", task_id: blocker.id, section: "TODO" }, as(t));
    expect(plan.status, plan.text).toBe(201);
    const boardIds = async () =>
      ((await gw.get("/v1/daily-plan?date=2026-11-23", as(t))).body.sections as Array<{ entries: Array<{ task_id: string }> }>).flatMap((s) =>
        s.entries.map((e) => e.task_id),
      );
    expect(await boardIds()).toEqual([blocker.id]);
    expect((await gw.delete(`/v1/tasks/${blocker.id}`, as(t))).status).toBe(200);
    const view = await gw.get(`/v1/tasks/${blocked.id}/dependencies`, as(t));
    expect(view.body).toMatchObject({ is_blocked: false, blocked_by_count: 0, blocked_by: [] });
    const blockedNow = await gw.get("/v1/tasks?is_blocked=true", as(t));
    expect(blockedNow.body.data).toEqual([]);
    expect(await boardIds()).toEqual([]);
    // A trashed task cannot be named: as a parent, a blocker, a board entry.
    const child = await gw.post("/v1/tasks", { title: "under it", parent_task_id: blocker.id }, as(t));
    expect(child.status, child.text).toBe(400);
    const moved = await gw.patch(`/v1/tasks/${blocked.id}`, { parent_task_id: blocker.id }, as(t));
    expect(moved.status, moved.text).toBe(400);
    const link = await gw.post(`/v1/tasks/${blocked.id}/dependencies`, { blocker_task_id: blocker.id }, as(t));
    expect(link.status, link.text).toBe(404);
    const entry = await gw.post("/v1/daily-plan/entries", { date: "2026-11-24", task_id: blocker.id, section: "TODO" }, as(t));
    expect(entry.status, entry.text).toBe(404);
    expect((await gw.post(`/v1/tasks/${blocker.id}/restore`, undefined, as(t))).status).toBe(200);
    const after = await gw.get(`/v1/tasks/${blocked.id}/dependencies`, as(t));
    expect(after.body).toMatchObject({ is_blocked: true, blocked_by_count: 1 });
    const comments = await gw.get(`/v1/tasks/${blocker.id}/comments`, as(t));
    expect(comments.body.data.map((c: { body: string }) => c.body)).toEqual(["still here"]);
    const followers = await gw.get(`/v1/tasks/${blocker.id}/followers`, as(t));
    expect(followers.body.data.map((x: { user_id: string }) => x.user_id).sort()).toEqual([t.userId, member.userId].sort());
    expect(await boardIds()).toEqual([blocker.id]);
  });

  it("when DELETE names a stale If-Match, or an If-None-Match naming the current version, then 412 with the ETag and nothing goes to the trash", async () => {
    const t = await f.tenant();
    const task = await newTask(t, { title: "guarded" });
    expect((await gw.patch(`/v1/tasks/${task.id}`, { title: "guarded, v2" }, as(t))).status).toBe(200);
    const stale = await gw.delete(`/v1/tasks/${task.id}`, as(t, { "if-match": '"1"' }));
    expect(stale.status, stale.text).toBe(412);
    expect(stale.body.code).toBe("precondition_failed");
    expect(stale.headers.get("etag")).toBe('"2"');
    const none = await gw.delete(`/v1/tasks/${task.id}`, as(t, { "if-none-match": '"2"' }));
    expect(none.status, none.text).toBe(412);
    expect((await gw.get(`/v1/tasks/${task.id}`, as(t))).status).toBe(200);
    expect(await trashIds(t)).toEqual([]);
    const ok = await gw.delete(`/v1/tasks/${task.id}`, as(t, { "if-match": '"2"' }));
    expect(ok.status, ok.text).toBe(200);
  });

  it("when DELETE and restore are repeated with one Idempotency-Key, then the second answers the first's result and nothing happens twice", async () => {
    const t = await f.tenant();
    const task = await newTask(t, { title: "once" });
    const first = await gw.delete(`/v1/tasks/${task.id}`, as(t, { "idempotency-key": "trash-once" }));
    const second = await gw.delete(`/v1/tasks/${task.id}`, as(t, { "idempotency-key": "trash-once" }));
    expect(first.status, first.text).toBe(200);
    expect(second.status, second.text).toBe(200);
    expect(second.body).toEqual(first.body);
    const r1 = await gw.post(`/v1/tasks/${task.id}/restore`, undefined, as(t, { "idempotency-key": "restore-once" }));
    const r2 = await gw.post(`/v1/tasks/${task.id}/restore`, undefined, as(t, { "idempotency-key": "restore-once" }));
    expect(r1.status, r1.text).toBe(200);
    expect(r2.body).toEqual(r1.body);
    const versions = await db`select count(*)::int as n from tasks.task_versions where organization_id = ${t.organizationId}`;
    expect(versions[0]?.["n"]).toBe(2);
  });

  it("when another organization names a task of this one on the trash routes, then 404 and the task is untouched", async () => {
    const owner = await f.tenant();
    const other = await f.tenant();
    const task = await newTask(owner, { title: "mine" });
    const trashed = await newTask(owner, { title: "mine, trashed" });
    expect((await gw.delete(`/v1/tasks/${trashed.id}`, as(owner))).status).toBe(200);
    for (const r of [
      await gw.delete(`/v1/tasks/${task.id}`, as(other)),
      await gw.post(`/v1/tasks/${trashed.id}/restore`, undefined, as(other)),
      await gw.delete(`/v1/trash/${trashed.id}`, as(other)),
    ]) {
      expect(r.status, r.text).toBe(404);
      expect(r.body.code).toBe("resource_not_found");
    }
    expect(await trashIds(other)).toEqual([]);
    expect(await trashIds(owner)).toEqual([trashed.id]);
    expect((await gw.get(`/v1/tasks/${task.id}`, as(owner))).status).toBe(200);
  });

  it("when the trash holds more than a page, then pages follow newest deletion first with none twice, and a member may list but not erase", async () => {
    const t = await f.tenant();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const task = await newTask(t, { title: `page ${i}` });
      expect((await gw.delete(`/v1/tasks/${task.id}`, as(t))).status).toBe(200);
      ids.push(task.id);
    }
    const seen: string[] = [];
    let after: string | undefined;
    for (let i = 0; i < 5; i++) {
      const r = await gw.get(`/v1/trash?limit=2${after ? `&after=${after}` : ""}`, as(t));
      expect(r.status, r.text).toBe(200);
      seen.push(...r.body.data.map((x: { id: string }) => x.id));
      if (!r.body.has_more) break;
      after = r.body.next_cursor;
    }
    expect(seen).toEqual([...ids].reverse());
    const member = await f.user(t.organizationId, "member");
    expect(await trashIds(member)).toEqual(seen);
    const refused = await gw.delete(`/v1/trash/${ids[0]}`, as(member));
    expect(refused.status, refused.text).toBe(403);
    expect(refused.body.code).toBe("insufficient_scope");
    expect(await trashIds(t)).toContain(ids[0]);
  });
});
