import { e2eContext } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";

const { gw, gw2, f, events, db } = e2eContext();
const projectCount = async (orgId: string) => Number((await db`select count(*)::int as n from tasks.projects where organization_id = ${orgId}`)[0]?.["n"]);

describe("projects", () => {
  it("when created, then 201 with an opaque id, the trimmed name and the description; then listed, fetched, updated", async () => {
    const t = await f.tenant();
    const r = await gw.post("/v1/projects", { name: "  Website  ", description: "Relaunch" }, { token: t.apiKey });
    expect(r.status, r.text).toBe(201);
    expect(r.body).toEqual({
      id: expect.stringMatching(/^prj_/),
      name: "Website",
      description: "Relaunch",
      created_at: expect.any(String),
      updated_at: r.body.created_at,
    });
    expect((await gw.get(`/v1/projects/${r.body.id}`, { token: t.apiKey })).body).toEqual(r.body);
    const second = (await gw.post("/v1/projects", { name: "Mobile" }, { token: t.apiKey })).body;
    const list = (await gw.get("/v1/projects?limit=1", { token: t.apiKey })).body;
    expect(list.data.map((p: { id: string }) => p.id)).toEqual([second.id]);
    const rest = (await gw.get(`/v1/projects?limit=1&after=${encodeURIComponent(list.next_cursor)}`, { token: t.apiKey })).body;
    expect(rest.data.map((p: { id: string }) => p.id)).toEqual([r.body.id]);
    const patched = await gw.patch(`/v1/projects/${r.body.id}`, { name: "Web", description: null }, { token: t.apiKey });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body).toMatchObject({ id: r.body.id, name: "Web", description: null });
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
    await gw.post("/v1/projects", { name: "A" }, { token: t.apiKey });
    const b = (await gw.post("/v1/projects", { name: "B" }, { token: t.apiKey })).body;
    const r = await gw.patch(`/v1/projects/${b.id}`, { name: "A" }, { token: t.apiKey });
    expect(r.status).toBe(400);
    expect(r.body.errors).toEqual([expect.objectContaining({ pointer: "/name" })]);
    expect((await gw.get(`/v1/projects/${b.id}`, { token: t.apiKey })).body.name).toBe("B");
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
    const t = await f.tenant();
    const other = await f.tenant();
    const theirs = (await gw.post("/v1/projects", { name: "Theirs" }, { token: other.apiKey })).body;
    expect((await gw.get(`/v1/projects/${theirs.id}`, { token: t.apiKey })).status).toBe(404);
    expect((await gw.patch(`/v1/projects/${theirs.id}`, { name: "Mine" }, { token: t.apiKey })).status).toBe(404);
    expect((await gw.delete(`/v1/projects/${theirs.id}`, { token: t.apiKey })).status).toBe(404);
    expect((await gw.get(`/v1/projects/${theirs.id}`, { token: other.apiKey })).body.name).toBe("Theirs");
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
