import { randomUUID } from "node:crypto";
import { e2eContext, type Tenant, bodyOf, must } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";
import { Task } from "@tasksvc/contracts";

// DESIGN.md sections 8 and 20: on every write that honours If-Match (PATCH, archive, unarchive,
// POST and DELETE dependencies of the path task), If-None-Match is evaluated too. When it names
// the current ETag (or is `*`: the task exists), the answer is 412 precondition_failed with the
// current ETag and nothing changes; under an Idempotency-Key the 412 is stored and replayed.

const { gw, db, f } = e2eContext();

const auth = (t: Tenant, headers: Record<string, string> = {}) => ({ token: t.apiKey, headers });

async function newTask(t: Tenant, title: string): Promise<string> {
  const r = await gw.post("/v1/tasks", { title }, auth(t));
  expect(r.status, r.text).toBe(201);
  return bodyOf(r, Task).id;
}

/** The task as stored: its version and whether it is archived. */
async function stored(t: Tenant, id: string): Promise<{ version: number; archived: boolean; title: string }> {
  const r = await gw.get(`/v1/tasks/${id}`, auth(t));
  expect(r.status, r.text).toBe(200);
  const task = bodyOf(r, Task);
  return { version: task.version, archived: task.archived === true, title: task.title };
}

const links = async (orgId: string) => Number((await db`select count(*)::int as n from tasks.dependencies where organization_id = ${orgId}`)[0]?.["n"]);

describe("If-None-Match on writes", () => {
  it("when a PATCH's If-None-Match names the current ETag (strong or weak) or is *, then 412 with the current ETag and nothing changes; an older ETag lets it through", async () => {
    const t = await f.tenant();
    const id = await newTask(t, "Original");
    for (const tag of ['"1"', 'W/"1"', '"7", "1"', "*"]) {
      const r = await gw.patch(`/v1/tasks/${id}`, { title: "Changed" }, auth(t, { "if-none-match": tag }));
      expect(r.status, `${tag}: ${r.text}`).toBe(412);
      expect(r.body.code).toBe("precondition_failed");
      expect(r.headers.get("etag")).toBe('"1"');
    }
    expect(await stored(t, id)).toMatchObject({ version: 1, title: "Original" });

    const ok = await gw.patch(`/v1/tasks/${id}`, { title: "Changed" }, auth(t, { "if-none-match": '"7"' }));
    expect(ok.status, ok.text).toBe(200);
    expect(ok.headers.get("etag")).toBe('"2"');
    // Both headers: each must hold.
    const both = await gw.patch(`/v1/tasks/${id}`, { title: "Again" }, auth(t, { "if-match": '"2"', "if-none-match": '"2"' }));
    expect(both.status, both.text).toBe(412);
    expect(await stored(t, id)).toMatchObject({ version: 2, title: "Changed" });
  });

  it("when archive, unarchive and the dependency writes carry an If-None-Match that matches, then each is 412 with the current ETag and nothing changes", async () => {
    const t = await f.tenant();
    const id = await newTask(t, "Blocked");
    const blocker = await newTask(t, "Blocker");
    const other = await newTask(t, "Other");

    const archive = await gw.post(`/v1/tasks/${id}/archive`, undefined, auth(t, { "if-none-match": '"1"' }));
    expect(archive.status, archive.text).toBe(412);
    expect(archive.headers.get("etag")).toBe('"1"');
    expect(await stored(t, id)).toMatchObject({ version: 1, archived: false });

    const link = await gw.post(`/v1/tasks/${id}/dependencies`, { blocker_task_id: blocker }, auth(t, { "if-none-match": "*" }));
    expect(link.status, link.text).toBe(412);
    expect(link.headers.get("etag")).toBe('"1"');
    expect(await links(t.organizationId)).toBe(0);

    // Set up a link and an archived task without the header, then try to undo them with it.
    expect((await gw.post(`/v1/tasks/${id}/dependencies`, { blocker_task_id: blocker }, auth(t))).status).toBe(201);
    const unlink = await gw.delete(`/v1/tasks/${id}/dependencies/${blocker}`, auth(t, { "if-none-match": '"1"' }));
    expect(unlink.status, unlink.text).toBe(412);
    expect(await links(t.organizationId)).toBe(1);

    const archived = await gw.post(`/v1/tasks/${other}/archive`, undefined, auth(t));
    expect(archived.status, archived.text).toBe(200);
    const etag = must(archived.headers.get("etag"), "the archived task's ETag");
    const unarchive = await gw.post(`/v1/tasks/${other}/unarchive`, undefined, auth(t, { "if-none-match": etag }));
    expect(unarchive.status, unarchive.text).toBe(412);
    expect(unarchive.headers.get("etag")).toBe(etag);
    expect(await stored(t, other)).toMatchObject({ archived: true });
  });

  it("when the 412 was answered under an Idempotency-Key, then a retry with the key replays it, even once the precondition would pass", async () => {
    const t = await f.tenant();
    const id = await newTask(t, "Keyed");
    const key = randomUUID();
    const first = await gw.patch(`/v1/tasks/${id}`, { title: "Keyed change" }, auth(t, { "idempotency-key": key, "if-none-match": '"1"' }));
    expect(first.status, first.text).toBe(412);
    // The task moves on: the same request would now pass, but the key's outcome is the 412.
    expect((await gw.patch(`/v1/tasks/${id}`, { priority: "HIGH" }, auth(t))).status).toBe(200);
    const again = await gw.patch(`/v1/tasks/${id}`, { title: "Keyed change" }, auth(t, { "idempotency-key": key, "if-none-match": '"1"' }));
    expect(again.status, again.text).toBe(412);
    expect(again.headers.get("idempotency-replayed")).toBe("true");
    expect(again.headers.get("etag")).toBe('"1"');
    expect(again.body.code).toBe("precondition_failed");
    expect(await stored(t, id)).toMatchObject({ version: 2, title: "Keyed" });
  });

  it("when a write's If-None-Match is malformed, then 400 naming it and nothing changes", async () => {
    const t = await f.tenant();
    const id = await newTask(t, "Untouched");
    const r = await gw.patch(`/v1/tasks/${id}`, { title: "No" }, auth(t, { "if-none-match": "1" }));
    expect(r.status, r.text).toBe(400);
    expect(r.body.errors).toEqual([expect.objectContaining({ pointer: "/If-None-Match" })]);
    expect(await stored(t, id)).toMatchObject({ version: 1, title: "Untouched" });
  });
});
