import { randomBytes } from "node:crypto";
import { natsBlobStore } from "@tasksvc/blobs";
import { connectNats } from "@tasksvc/nats";
import { e2eContext, eventually, type Tenant } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";
import { leftovers } from "./erasure-probe.js";

// Erasure at once (DELETE /v1/trash/{id} by an owner): a task that had everything hangs off it, then
// nothing of it in any table of the tasks, boards and notifications schemas, nor its file in the blob
// store; the feed keeps its events reduced to { id }, and task.purged reaches only endpoints naming it.
const { gw, f, db, stack } = e2eContext();

type Caller = Pick<Tenant, "apiKey">;
const as = (t: Caller, headers?: Record<string, string>) => ({ token: t.apiKey, ...(headers ? { headers } : {}) });
const ok = async <T>(p: Promise<{ status: number; text: string; body: T }>, status = 200): Promise<T> => {
  const r = await p;
  expect(r.status, r.text).toBe(status);
  return r.body;
};

/** A task carrying every kind of row there is, with a marker in its text, comments and file name. */
async function fullTask(t: Tenant, marker: string) {
  const member = await f.user(t.organizationId, "member");
  const label = await ok(gw.post("/v1/labels", { name: "kept label" }, as(t)), 201);
  await ok(gw.post("/v1/custom-fields", { key: "estimate", name: "Estimate", type: "number" }, as(t)), 201);
  const project = await ok(gw.post("/v1/projects", { name: "kept project" }, as(t)), 201);
  const task = await ok(
    gw.post(
      "/v1/tasks",
      {
        title: `secret ${marker}`,
        notes: `notes ${marker}`,
        assignee_ids: [member.userId],
        label_ids: [label.id],
        project_ids: [project.id],
        custom_fields: { estimate: 5 },
        due_date: new Date(Date.now() + 7 * 24 * 3600_000).toISOString(),
      },
      as(t, { "idempotency-key": `create-${marker}` }),
    ),
    201,
  );
  const sub = await ok(gw.post("/v1/tasks", { title: `sub ${marker}`, parent_task_id: task.id }, as(t)), 201);
  await ok(gw.patch(`/v1/tasks/${task.id}`, { description: `described ${marker}` }, as(t, { "idempotency-key": `patch-${marker}` })));
  const blocker = await ok(gw.post("/v1/tasks", { title: "blocker of it" }, as(t)), 201);
  const blocked = await ok(gw.post("/v1/tasks", { title: "blocked by it" }, as(t)), 201);
  await ok(gw.post(`/v1/tasks/${task.id}/dependencies`, { blocker_task_id: blocker.id }, as(t)), 201);
  await ok(gw.post(`/v1/tasks/${blocked.id}/dependencies`, { blocker_task_id: task.id }, as(t)), 201);
  const comment = await ok(
    gw.post(`/v1/tasks/${task.id}/comments`, { body: `hi <@${member.userId}> ${marker}` }, as(t, { "idempotency-key": `c-${marker}` })),
    201,
  );
  await ok(gw.patch(`/v1/tasks/${task.id}/comments/${comment.id}`, { body: `edited ${marker}` }, as(t)));
  await ok(gw.put(`/v1/tasks/${task.id}/followers/me`, undefined, as(member)));
  await ok(gw.post("/v1/daily-plan/entries", { date: "2026-11-23", task_id: task.id, section: "TODO" }, as(member)), 201);
  const body = `file ${marker}`;
  const ticket = await ok(
    gw.post(`/v1/tasks/${task.id}/attachments/uploads`, { file_name: `${marker}.txt`, content_type: "text/plain", size: body.length }, as(t)),
    201,
  );
  const put = await fetch(ticket.upload_url, { method: "PUT", body, headers: { "content-type": "text/plain" } });
  expect(put.status).toBe(200);
  await ok(
    gw.post(
      `/v1/tasks/${task.id}/attachments`,
      { file_name: `${marker}.txt`, file_key: ticket.file_key, content_type: "text/plain", size: body.length },
      as(t),
    ),
    201,
  );
  // The member hears of the assignment and the mention.
  await eventually(async () => (await gw.get("/v1/notifications/unread-count", as(member))).body.count >= 2, { what: "notifications" });
  return { task, sub, member, comment, fileKey: ticket.file_key as string, blocker, blocked };
}

describe("erasure", () => {
  it("when an owner erases a trashed task at once, then no table of tasks, boards or notifications names it, its file is gone, the feed keeps { id } events, and only an endpoint naming task.purged gets it", async () => {
    const t = await f.tenant();
    const marker = `mk${randomBytes(8).toString("hex")}`;
    const all = await ok(gw.post("/v1/webhook-endpoints", { url: "https://hooks.example.com/all" }, as(t)), 201);
    const named = await ok(gw.post("/v1/webhook-endpoints", { url: "https://hooks.example.com/purged", event_types: ["task.purged"] }, as(t)), 201);
    const { task, sub, member, comment, fileKey, blocker, blocked } = await fullTask(t, marker);
    const number = Number(task.id.slice(2));
    await ok(gw.delete(`/v1/tasks/${task.id}`, as(t)));
    expect(await ok(gw.delete(`/v1/trash/${task.id}`, as(t)))).toEqual({ id: task.id });

    for (const n of [number, Number(sub.id.slice(2))]) {
      const left = await eventually(
        async () => {
          const l = await leftovers(db, t.organizationId, n, marker);
          return l.length === 0 ? l : false;
        },
        { what: `nothing left of T-${n}`, timeoutMs: 15_000 },
      ).catch(async () => leftovers(db, t.organizationId, n, marker));
      expect(left).toEqual([]);
    }
    const mentions = await db`select count(*)::int as n from notifications.comment_mentions where comment_id = ${comment.id}`;
    expect(mentions[0]?.["n"]).toBe(0);
    expect((await gw.get("/v1/notifications/unread-count", as(member))).body.count).toBe(0);
    const nc = await connectNats({ url: stack.natsUrl, name: "test-erasure" });
    try {
      const store = await natsBlobStore(nc, stack.namespace);
      expect(await store.stat(fileKey)).toBeNull();
    } finally {
      await nc.close();
    }
    const [storage] = await db`select used_bytes::int as used from tasks.storage where organization_id = ${t.organizationId}`;
    expect(storage?.["used"]).toBe(0);

    // The feed: every event of the task kept, reduced; the comments' reduced to { id, task_id }; task.purged for both tasks.
    const events = (await ok(gw.get("/v1/events?limit=100", as(t)))).data as Array<{ type: string; data: Record<string, unknown>; changes?: unknown }>;
    const ofTask = events.filter((e) => e.data["id"] === task.id);
    expect(ofTask.map((e) => e.type)).toEqual(["task.purged", "task.deleted", "task.updated", "task.updated", "task.created"]);
    for (const e of ofTask) expect(e).toEqual({ id: expect.any(String), type: e.type, timestamp: expect.any(String), data: { id: task.id } });
    const ofComment = events.filter((e) => e.data["id"] === comment.id);
    expect(ofComment.map((e) => e.data)).toEqual([
      { id: comment.id, task_id: task.id },
      { id: comment.id, task_id: task.id },
    ]);
    expect(events.filter((e) => e.type === "task.purged").map((e) => e.data["id"])).toEqual([task.id, sub.id]);
    expect(JSON.stringify(events)).not.toContain(marker);
    const gone = await gw.get(`/v1/events?task_id=${task.id}`, as(t));
    expect(gone.status, gone.text).toBe(404);
    // The tasks around it stay, unlinked.
    const view = await ok(gw.get(`/v1/tasks/${blocked.id}/dependencies`, as(t)));
    expect(view).toMatchObject({ blocked_by_count: 0, blocking_count: 0 });
    expect((await ok(gw.get(`/v1/tasks/${blocker.id}/dependencies`, as(t)))).blocking_count).toBe(0);
    // Erased: no longer in the trash, and neither restorable nor erasable again.
    expect((await ok(gw.get("/v1/trash", as(t)))).data).toEqual([]);
    expect((await gw.post(`/v1/tasks/${task.id}/restore`, undefined, as(t))).status).toBe(404);
    expect((await gw.delete(`/v1/trash/${task.id}`, as(t))).status).toBe(404);
    // A number is never given again.
    const next = await ok(gw.post("/v1/tasks", { title: "after" }, as(t)), 201);
    expect(Number(next.id.slice(2))).toBeGreaterThan(Number(blocked.id.slice(2)));

    const deliveries = async (endpoint: string) =>
      (await db`select event_type from webhooks.deliveries where endpoint_id = ${endpoint} and event_type like 'task.purged'`).length;
    await eventually(async () => (await deliveries(named.id)) === 2, { what: "task.purged delivered to the endpoint naming it" });
    // The fan-out of the same events reached the other endpoint's task.deleted: task.purged would have too by now.
    await eventually(async () => (await db`select 1 from webhooks.deliveries where endpoint_id = ${all.id} and event_type = 'task.deleted'`).length === 2);
    expect(await deliveries(all.id)).toBe(0);
  }, 60_000);

  it("when another organization's task has the same number and creation time, then erasing a task leaves that organization's Idempotency-Key record, and its retry answers its first task", async () => {
    const [a, b] = [await f.tenant(), await f.tenant()];
    const keyB = `twin-${randomBytes(6).toString("hex")}`;
    const taskA = await ok(gw.post("/v1/tasks", { title: "erased" }, as(a, { "idempotency-key": `twin-${randomBytes(6).toString("hex")}` })), 201);
    const taskB = await ok(gw.post("/v1/tasks", { title: "kept" }, as(b, { "idempotency-key": keyB })), 201);
    expect(taskB.id).toBe(taskA.id);
    // The same millisecond, as two organizations' first tasks may share.
    await db`update tasks.idempotency set result = jsonb_set(result, '{created_at}', to_jsonb(${taskA.created_at}::text)) where key = ${keyB}`;
    await ok(gw.delete(`/v1/tasks/${taskA.id}`, as(a)));
    expect(await ok(gw.delete(`/v1/trash/${taskA.id}`, as(a)))).toEqual({ id: taskA.id });
    expect(await db`select 1 from tasks.idempotency where key = ${keyB}`).toHaveLength(1);
    const retried = await ok(gw.post("/v1/tasks", { title: "kept" }, as(b, { "idempotency-key": keyB })), 201);
    expect(retried.id).toBe(taskB.id);
    expect((await ok(gw.get("/v1/tasks", as(b)))).data).toHaveLength(1);
  });

  it("when an erasure is asked for a task in the trash of another organization, or by a member, then nothing of it goes", async () => {
    const t = await f.tenant();
    const task = await ok(gw.post("/v1/tasks", { title: "kept" }, as(t)), 201);
    await ok(gw.delete(`/v1/tasks/${task.id}`, as(t)));
    const admin = await f.user(t.organizationId, "admin");
    const member = await f.user(t.organizationId, "member");
    expect((await gw.delete(`/v1/trash/${task.id}`, as(member))).status).toBe(403);
    expect((await gw.delete(`/v1/trash/${task.id}`, as(await f.tenant()))).status).toBe(404);
    expect((await ok(gw.get("/v1/trash", as(t)))).data.map((x: { id: string }) => x.id)).toEqual([task.id]);
    // An admin may.
    expect(await ok(gw.delete(`/v1/trash/${task.id}`, as(admin)))).toEqual({ id: task.id });
    expect((await ok(gw.get("/v1/trash", as(t)))).data).toEqual([]);
  });
});
