import { operations } from "@tasksvc/gateway";
import { e2eContext, type Tenant } from "@tasksvc/testing";
import { beforeAll, describe, expect, it } from "vitest";
import type { z } from "zod";

// A task in the trash answers every route as if it did not exist. The routes come from the
// gateway's operation table: every operation with a task in its path must answer 404 for it, and
// every operation naming a task in its body or query must have a case below, so a route added later
// cannot be forgotten.
const { gw, f } = e2eContext();

interface Ids {
  task_id: string;
  live: string;
  blocker_task_id: string;
  comment_id: string;
  attachment_id: string;
  user_id: string;
}
let t: Tenant;
let ids: Ids;
const as = () => ({ token: t.apiKey });

/** Operations on a task in the trash that do not answer 404: they are the trash's own, tested in trash.test.ts and trash-erasure.test.ts. */
const TRASH_OWN = new Set(["POST /v1/tasks/:task_id/restore", "DELETE /v1/trash/:task_id"]);

/** A body for each operation with a task in its path that takes one (valid but for the task). */
const PATH_BODIES: Record<string, (i: Ids) => unknown> = {
  "PATCH /v1/tasks/:task_id": () => ({ title: "changed in the trash" }),
  "POST /v1/tasks/:task_id/dependencies": (i) => ({ blocker_task_id: i.live }),
  "POST /v1/tasks/:task_id/comments": () => ({ body: "a comment in the trash" }),
  "PATCH /v1/tasks/:task_id/comments/:comment_id": () => ({ body: "edited in the trash" }),
  "POST /v1/tasks/:task_id/attachments/uploads": () => ({ file_name: "late.txt", content_type: "text/plain", size: 4 }),
  "POST /v1/tasks/:task_id/attachments": () => ({ file_name: "late.txt", file_key: "att/org_x/upl_x", content_type: "text/plain", size: 4 }),
};

/** Operations that name a task in their body or query: naming a trashed one is as naming an unknown one. */
const NAMING: Record<string, { path: (i: Ids) => string; body?: (i: Ids) => unknown; status: number }> = {
  "POST /v1/tasks": { path: () => "/v1/tasks", body: (i) => ({ title: "under the trash", parent_task_id: i.task_id }), status: 400 },
  "PATCH /v1/tasks/:task_id": { path: (i) => `/v1/tasks/${i.live}`, body: (i) => ({ parent_task_id: i.task_id }), status: 400 },
  "POST /v1/tasks/:task_id/dependencies": { path: (i) => `/v1/tasks/${i.live}/dependencies`, body: (i) => ({ blocker_task_id: i.task_id }), status: 404 },
  "POST /v1/daily-plan/entries": {
    path: () => "/v1/daily-plan/entries",
    body: (i) => ({ date: "2026-11-23", task_id: i.task_id, section: "TODO" }),
    status: 404,
  },
  "GET /v1/tasks": { path: (i) => `/v1/tasks?parent_task_id=${i.task_id}`, status: 404 },
  // The feed keeps a trashed task's events, and its filter still names the task (until it is erased).
  "GET /v1/events": { path: (i) => `/v1/events?task_id=${i.task_id}`, status: 200 },
};

const nameOf = (op: { method: string; url: string }) => `${op.method} ${op.url}`;
const pathOf = (url: string, i: Ids) =>
  url.replace(/:([a-z_]+)/g, (_m, name: string) => {
    if (!(name in i)) throw new Error(`no id for :${name} (${url}): add one to Ids`);
    return encodeURIComponent(i[name as keyof Ids]);
  });
const shapeKeys = (s: z.ZodType | undefined): string[] => {
  const shape = (s as unknown as { shape?: Record<string, unknown> } | undefined)?.shape;
  return shape ? Object.keys(shape) : [];
};

beforeAll(async () => {
  t = await f.tenant();
  const member = await f.user(t.organizationId, "member");
  const post = async (path: string, body: unknown) => {
    const r = await gw.post(path, body, as());
    expect(r.status, r.text).toBe(201);
    return r.body;
  };
  const task = await post("/v1/tasks", { title: "to the trash", assignee_ids: [member.userId] });
  const live = await post("/v1/tasks", { title: "live" });
  const blocker = await post("/v1/tasks", { title: "its blocker" });
  await post(`/v1/tasks/${task.id}/dependencies`, { blocker_task_id: blocker.id });
  const comment = await post(`/v1/tasks/${task.id}/comments`, { body: "said" });
  const ticket = await post(`/v1/tasks/${task.id}/attachments/uploads`, { file_name: "a.txt", content_type: "text/plain", size: 5 });
  expect((await fetch(ticket.upload_url, { method: "PUT", body: "bytes", headers: { "content-type": "text/plain" } })).status).toBe(200);
  const attachment = await post(`/v1/tasks/${task.id}/attachments`, { file_name: "a.txt", file_key: ticket.file_key, content_type: "text/plain", size: 5 });
  await post("/v1/daily-plan/entries", { date: "2026-11-23", task_id: task.id, section: "TODO" });
  ids = { task_id: task.id, live: live.id, blocker_task_id: blocker.id, comment_id: comment.id, attachment_id: attachment.id, user_id: member.userId };
  const r = await gw.delete(`/v1/tasks/${task.id}`, as());
  expect(r.status, r.text).toBe(200);
});

describe("a task in the trash is invisible", () => {
  const onTask = operations.filter((op) => op.url.startsWith("/v1/tasks/:task_id") && !TRASH_OWN.has(nameOf(op)));
  it("when the operation table is read, then it has task routes, and the trash's own are among them", () => {
    expect(onTask.length).toBeGreaterThanOrEqual(20);
    for (const name of TRASH_OWN) expect(operations.map(nameOf)).toContain(name);
  });
  for (const op of onTask) {
    const key = nameOf(op);
    it(`when ${key} names the trashed task, then 404 resource_not_found`, async () => {
      const body = PATH_BODIES[key];
      if (op.body) expect(body, `${key} takes a body: add one to PATH_BODIES`).toBeDefined();
      const r = await gw.request(op.method, pathOf(op.url, ids), { ...as(), ...(body ? { body: body(ids) } : {}) });
      expect(r.status, r.text).toBe(404);
      expect(r.body.code).toBe("resource_not_found");
    });
  }

  const naming = operations.filter((op) => [...shapeKeys(op.body), ...shapeKeys(op.query)].some((k) => k.endsWith("task_id")));
  it("when the operation table is read, then every operation naming a task in its body or query has a case", () => {
    expect(naming.map(nameOf).filter((k) => NAMING[k] === undefined)).toEqual([]);
  });
  for (const [key, c] of Object.entries(NAMING)) {
    it(`when ${key} names the trashed task in its body or query, then ${c.status}`, async () => {
      const [method = "GET"] = key.split(" ");
      const r = await gw.request(method, c.path(ids), { ...as(), ...(c.body ? { body: c.body(ids) } : {}) });
      expect(r.status, r.text).toBe(c.status);
    });
  }

  it("when lists, search, the board, a batch and a dependent's view are read, then the trashed task is in none, and the trash lists it", async () => {
    const list = await gw.get("/v1/tasks?limit=100", as());
    expect(list.body.data.map((x: { id: string }) => x.id).sort()).toEqual([ids.live, ids.blocker_task_id].sort());
    const archived = await gw.get("/v1/tasks?archived=true", as());
    expect(archived.body.data).toEqual([]);
    const search = await gw.post("/v1/tasks/search", { filter: { field: "text", op: "matches", value: "trash" } }, as());
    expect(search.body.data).toEqual([]);
    const board = await gw.get("/v1/daily-plan?date=2026-11-23", as());
    expect(board.body.sections.flatMap((s: { entries: unknown[] }) => s.entries)).toEqual([]);
    const blocking = await gw.get(`/v1/tasks/${ids.blocker_task_id}/dependencies`, as());
    expect(blocking.body).toMatchObject({ blocking_count: 0, blocking: [] });
    const batch = await gw.post("/v1/tasks/batch", { operations: [{ method: "update", task_id: ids.task_id, body: { title: "x" } }] }, as());
    expect(batch.status, batch.text).toBe(200);
    expect(JSON.stringify(batch.body.results)).toContain("resource_not_found");
    const trash = await gw.get("/v1/trash", as());
    expect(trash.body.data.map((x: { id: string }) => x.id)).toEqual([ids.task_id]);
  });
});
