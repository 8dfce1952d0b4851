import { createClient, unwrap } from "@tasksvc/client";
import { e2eContext, type Tenant, gatewayUrl } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";

// Tasks are made and views read through the typed client (@tasksvc/client); links go over raw
// HTTP, since their status (201 new, 200 already there) is what these tests check.
const { stack, gw, gw2, f, events, db } = e2eContext();
const client = (t: Tenant) => createClient({ baseUrl: gatewayUrl(stack), token: t.apiKey, retries: 0 });

async function tasks(t: Tenant, n: number): Promise<string[]> {
  const api = client(t);
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push(unwrap(await api.POST("/v1/tasks", { body: { title: `task ${i + 1}` } })).id);
  return ids;
}
const view = async (t: Tenant, task: string) => unwrap(await client(t).GET("/v1/tasks/{task_id}/dependencies", { params: { path: { task_id: task } } }));
const link = (t: Tenant, blocked: string, blocker: string, via = gw) =>
  via.post(`/v1/tasks/${blocked}/dependencies`, { blocker_task_id: blocker }, { token: t.apiKey });
const linkCount = async (orgId: string) => Number((await db`select count(*)::int as n from tasks.dependencies where organization_id = ${orgId}`)[0]?.["n"]);

describe("dependencies", () => {
  it("when a blocker is recorded, then 201 with the view; recording it again is 200, unchanged, no second row and no second event", async () => {
    const t = await f.tenant();
    const [a, b] = await tasks(t, 2);
    const mark = await events.mark();
    const r = await link(t, a, b);
    expect(r.status, r.text).toBe(201);
    expect(r.body).toEqual({
      task_id: a,
      is_blocked: true,
      blocked_by_count: 1,
      blocking_count: 0,
      blocked_by: [{ task_id: b, title: "task 2", status: "TODO", open: true }],
      blocking: [],
    });
    const again = await link(t, a, b.slice(2), gw2);
    expect(again.status, again.text).toBe(200);
    expect(again.body).toEqual(r.body);
    expect(await linkCount(t.organizationId)).toBe(1);
    const got = await events.await(mark, t.organizationId, 1);
    expect(got.map((e) => [e.type, e.data.id])).toEqual([["task.updated", a]]);
    expect(await view(t, b)).toMatchObject({
      task_id: b,
      is_blocked: false,
      blocked_by_count: 0,
      blocking_count: 1,
      blocking: [{ task_id: a, title: "task 1", status: "TODO", open: true }],
    });
  });

  it("when the blocker is completed, then it is no longer open and the task is not blocked", async () => {
    const t = await f.tenant();
    const [a, b, c] = await tasks(t, 3);
    await link(t, a, b);
    await link(t, a, c);
    const api = client(t);
    unwrap(await api.PATCH("/v1/tasks/{task_id}", { params: { path: { task_id: b } }, body: { status: "COMPLETED", title: "done" } }));
    const before = await view(t, a);
    expect(before).toMatchObject({ is_blocked: true, blocked_by_count: 2 });
    expect(before.blocked_by).toEqual([
      { task_id: b, title: "done", status: "COMPLETED", open: false },
      { task_id: c, title: "task 3", status: "TODO", open: true },
    ]);
    unwrap(await api.PATCH("/v1/tasks/{task_id}", { params: { path: { task_id: c } }, body: { status: "COMPLETED" } }));
    expect((await view(t, a)).is_blocked).toBe(false);
  });

  it("when a task would block itself, then 400 at /blocker_task_id", async () => {
    const t = await f.tenant();
    const [a] = await tasks(t, 1);
    for (const self of [a, a.slice(2)]) {
      const r = await link(t, a, self);
      expect(r.status, r.text).toBe(400);
      expect(r.body.errors).toEqual([expect.objectContaining({ pointer: "/blocker_task_id" })]);
    }
    expect((await link(t, a, "nope")).status).toBe(400);
    expect(await linkCount(t.organizationId)).toBe(0);
  });

  it("when the blocker is unknown or another organization's, or the task is, then 404", async () => {
    const t = await f.tenant();
    const other = await f.tenant();
    const [a] = await tasks(t, 1);
    await tasks(other, 3);
    expect((await link(t, a, "T-3")).status).toBe(404);
    expect((await link(t, a, "T-999")).status).toBe(404);
    expect((await link(t, "T-3", a)).status).toBe(404);
    expect((await gw.get("/v1/tasks/T-3/dependencies", { token: t.apiKey })).status).toBe(404);
    expect(await linkCount(t.organizationId)).toBe(0);
  });

  it("when a link would close a loop of length 1, 2 or 4, then 409 dependency_cycle and nothing is recorded", async () => {
    const t = await f.tenant();
    const [a, b, c, d] = await tasks(t, 4);
    expect((await link(t, a, b)).status).toBe(201); // a blocked by b
    const two = await link(t, b, a);
    expect(two.status, two.text).toBe(409);
    expect(two.body.code).toBe("dependency_cycle");
    expect((await link(t, b, c)).status).toBe(201);
    expect((await link(t, c, d)).status).toBe(201);
    const four = await link(t, d, a);
    expect(four.status).toBe(409);
    expect(await linkCount(t.organizationId)).toBe(3);
    // Not a loop: a second path to the same blocker.
    expect((await link(t, a, d)).status).toBe(201);
  });

  it("when links that together close a loop arrive at the same moment, then exactly one is recorded", async () => {
    for (let round = 0; round < 5; round++) {
      const t = await f.tenant();
      const [a, b, c] = await tasks(t, 3);
      await link(t, a, b); // a ← b
      // b ← c and c ← a together would close a ← b ← c ← a.
      const rs = await Promise.all([link(t, b, c, gw), link(t, c, a, gw2)]);
      expect(rs.map((r) => r.status).sort()).toEqual([201, 409]);
      expect(await linkCount(t.organizationId)).toBe(2);
    }
  });

  it("when a link is removed, then the view no longer shows it and a task.updated is emitted; removing it again is 404", async () => {
    const t = await f.tenant();
    const [a, b] = await tasks(t, 2);
    await link(t, a, b);
    const mark = await events.mark();
    const r = await gw.delete(`/v1/tasks/${a}/dependencies/${b}`, { token: t.apiKey });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ task_id: a, is_blocked: false, blocked_by_count: 0, blocked_by: [] });
    expect((await gw.delete(`/v1/tasks/${a}/dependencies/${b}`, { token: t.apiKey })).status).toBe(404);
    expect((await events.await(mark, t.organizationId, 1)).map((e) => e.type)).toEqual(["task.updated"]);
    // The loop check sees the removal: b may now be blocked by a.
    expect((await link(t, b, a)).status).toBe(201);
  });
});
