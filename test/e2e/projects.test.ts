import { createClient, TasksvcError, unwrap } from "@tasksvc/client";
import { e2eContext, gatewayUrl } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";

// Behaviour through the typed client (@tasksvc/client), as API users write it; raw HTTP where
// the test is about the wire (replayed bytes, fields the client's types would refuse).
const { stack, gw, gw2, f, events, db } = e2eContext();
const client = (token: string) => createClient({ baseUrl: gatewayUrl(stack), token, retries: 0 });
/** The problem an awaited call answered (the test fails if it succeeded). */
const problemOf = async (call: Promise<{ data?: unknown; error?: unknown; response: Response }>): Promise<TasksvcError> => {
  try {
    unwrap(await call);
  } catch (e) {
    if (e instanceof TasksvcError) return e;
    throw e;
  }
  throw new Error("the call succeeded");
};
const projectCount = async (orgId: string) => Number((await db`select count(*)::int as n from tasks.projects where organization_id = ${orgId}`)[0]?.["n"]);

describe("projects", () => {
  it("when created, then 201 with an opaque id, the trimmed name and the description; then listed, fetched, updated", async () => {
    const t = await f.tenant();
    const api = client(t.apiKey);
    const created = await api.POST("/v1/projects", { body: { name: "  Website  ", description: "Relaunch" } });
    expect(created.response.status).toBe(201);
    const project = unwrap(created);
    expect(project).toEqual({
      id: expect.stringMatching(/^prj_/),
      name: "Website",
      description: "Relaunch",
      created_at: expect.any(String),
      updated_at: project.created_at,
    });
    expect(unwrap(await api.GET("/v1/projects/{project_id}", { params: { path: { project_id: project.id } } }))).toEqual(project);
    const second = unwrap(await api.POST("/v1/projects", { body: { name: "Mobile" } }));
    // Newest first, one per page: the client follows the cursor.
    const ids: string[] = [];
    for await (const p of api.pages("/v1/projects", { limit: 1 })) ids.push(p.id);
    expect(ids).toEqual([second.id, project.id]);
    const patched = unwrap(
      await api.PATCH("/v1/projects/{project_id}", { params: { path: { project_id: project.id } }, body: { name: "Web", description: null } }),
    );
    expect(patched).toMatchObject({ id: project.id, name: "Web", description: null });
  });

  it("when a name is already used (after trimming), then 400 at /name, and with an Idempotency-Key that 400 is replayed identically", async () => {
    const t = await f.tenant();
    await gw.post("/v1/projects", { name: "Ops" }, { token: t.apiKey });
    const headers = { "idempotency-key": "dup-project" };
    const r = await gw.post("/v1/projects", { name: " Ops " }, { token: t.apiKey, headers });
    expect(r.status, r.text).toBe(400);
    expect(r.body).toMatchObject({ code: "validation_failed", errors: [{ pointer: "/name" }] });
    const again = await gw2.post("/v1/projects", { name: " Ops " }, { token: t.apiKey, headers });
    expect(again.status).toBe(400);
    expect(again.headers.get("idempotency-replayed")).toBe("true");
    expect(again.text).toBe(r.text);
    expect(await projectCount(t.organizationId)).toBe(1);
    const other = await f.tenant();
    expect((await gw.post("/v1/projects", { name: "Ops" }, { token: other.apiKey })).status).toBe(201);
  });

  it("when renamed onto another project's name, then 400 at /name and nothing changes", async () => {
    const t = await f.tenant();
    const api = client(t.apiKey);
    unwrap(await api.POST("/v1/projects", { body: { name: "A" } }));
    const b = unwrap(await api.POST("/v1/projects", { body: { name: "B" } }));
    const refused = await problemOf(api.PATCH("/v1/projects/{project_id}", { params: { path: { project_id: b.id } }, body: { name: "A" } }));
    expect(refused).toMatchObject({ status: 400, code: "validation_failed" });
    expect(refused.problem.errors).toEqual([expect.objectContaining({ pointer: "/name" })]);
    expect(unwrap(await api.GET("/v1/projects/{project_id}", { params: { path: { project_id: b.id } } })).name).toBe("B");
  });

  it("when the body breaks a rule, then 400 naming the field", async () => {
    const t = await f.tenant();
    for (const [body, pointer] of [
      [{ name: "" }, "/name"],
      [{ name: "   " }, "/name"],
      [{ name: "x".repeat(201) }, "/name"],
      [{ name: "x", description: "" }, "/description"],
      [{ name: "x", description: "d".repeat(2001) }, "/description"],
      [{ name: "x", color: "red" }, "/color"],
    ] as const) {
      const r = await gw.post("/v1/projects", body, { token: t.apiKey });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.errors.map((e: { pointer: string }) => e.pointer)).toContain(pointer);
    }
    expect(await projectCount(t.organizationId)).toBe(0);
  });

  it("when another organization's project is read, updated or deleted, then 404 and nothing changes", async () => {
    const mine = client((await f.tenant()).apiKey);
    const owner = client((await f.tenant()).apiKey);
    const theirs = unwrap(await owner.POST("/v1/projects", { body: { name: "Theirs" } }));
    const path = { project_id: theirs.id };
    expect(await problemOf(mine.GET("/v1/projects/{project_id}", { params: { path } }))).toMatchObject({ status: 404, code: "resource_not_found" });
    expect(await problemOf(mine.PATCH("/v1/projects/{project_id}", { params: { path }, body: { name: "Mine" } }))).toMatchObject({ status: 404 });
    expect(await problemOf(mine.DELETE("/v1/projects/{project_id}", { params: { path } }))).toMatchObject({ status: 404 });
    expect(unwrap(await owner.GET("/v1/projects/{project_id}", { params: { path } })).name).toBe("Theirs");
  });

  it("when a task belongs to several projects and one is deleted, then the task keeps the others and a task.updated is emitted", async () => {
    const t = await f.tenant();
    const a = (await gw.post("/v1/projects", { name: "A" }, { token: t.apiKey })).body;
    const b = (await gw.post("/v1/projects", { name: "B" }, { token: t.apiKey })).body;
    const task = (await gw.post("/v1/tasks", { title: "shared", project_ids: [a.id, b.id] }, { token: t.apiKey })).body;
    expect(task.project_ids).toEqual([a.id, b.id]);
    const mark = await events.mark();
    const del = await gw.delete(`/v1/projects/${a.id}`, { token: t.apiKey });
    expect(del.status, del.text).toBe(200);
    expect(del.body).toEqual({ id: a.id, deleted: true });
    expect((await gw.get(`/v1/tasks/${task.id}`, { token: t.apiKey })).body.project_ids).toEqual([b.id]);
    expect((await gw.get(`/v1/projects/${a.id}`, { token: t.apiKey })).status).toBe(404);
    const got = await events.await(mark, t.organizationId, 1);
    expect(got.map((e) => [e.type, e.data.project_ids])).toEqual([["task.updated", [b.id]]]);
  });
});
