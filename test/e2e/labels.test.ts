import { DEFAULT_LABEL_COLOR } from "@tasksvc/contracts";
import { e2eContext, type Tenant } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";

// The organization's labels through the HTTP API: a name unique ignoring case, a colour, a page by name.
const { gw, gw2, f, db } = e2eContext();

const as = (t: Tenant, headers: Record<string, string> = {}) => ({ token: t.apiKey, headers });
const labelCount = async (orgId: string) => Number((await db`select count(*)::int as n from tasks.labels where organization_id = ${orgId}`)[0]?.["n"]);
const pointersOf = (body: { errors?: Array<{ pointer: string }> }) => (body.errors ?? []).map((e) => e.pointer);

describe("labels", () => {
  it("when created without a colour, then 201 with Location, the trimmed name and the default colour; then fetched, patched and deleted", async () => {
    const t = await f.tenant();
    const created = await gw.post("/v1/labels", { name: "  bug  " }, as(t));
    expect(created.status, created.text).toBe(201);
    const label = created.body;
    expect(label).toEqual({
      id: expect.stringMatching(/^lbl_/),
      name: "bug",
      color: DEFAULT_LABEL_COLOR,
      description: null,
      created_at: expect.any(String),
      updated_at: label.created_at,
    });
    expect(created.headers.get("location")).toBe(`/v1/labels/${label.id}`);
    const read = await gw.get(`/v1/labels/${label.id}`, as(t));
    expect(read.status, read.text).toBe(200);
    expect(read.body).toEqual(label);

    const patched = await gw.patch(`/v1/labels/${label.id}`, { name: "Bug", color: "#D73A4A", description: "Something is not working." }, as(t));
    expect(patched.status, patched.text).toBe(200);
    // Renaming a label onto its own name in another case is no clash; a colour is kept in one spelling.
    expect(patched.body).toMatchObject({ id: label.id, name: "Bug", color: "#d73a4a", description: "Something is not working.", created_at: label.created_at });
    const cleared = await gw.patch(`/v1/labels/${label.id}`, { description: null }, as(t));
    expect(cleared.body).toMatchObject({ name: "Bug", color: "#d73a4a", description: null });

    const deleted = await gw.delete(`/v1/labels/${label.id}`, as(t));
    expect(deleted.status, deleted.text).toBe(200);
    expect(deleted.body).toEqual({ id: label.id });
    expect((await gw.get(`/v1/labels/${label.id}`, as(t))).status).toBe(404);
    const again = await gw.delete(`/v1/labels/${label.id}`, as(t));
    expect(again.status).toBe(404);
    expect(again.body.code).toBe("resource_not_found");
    expect(await labelCount(t.organizationId)).toBe(0);
  });

  it("when a name is taken ignoring case and surrounding spaces, then 400 at /name on create and on rename, and nothing changes", async () => {
    const t = await f.tenant();
    expect((await gw.post("/v1/labels", { name: "Urgent" }, as(t))).status).toBe(201);
    const dup = await gw.post("/v1/labels", { name: "  uRGENT " }, as(t));
    expect(dup.status, dup.text).toBe(400);
    expect(dup.body).toMatchObject({ code: "validation_failed" });
    expect(pointersOf(dup.body)).toEqual(["/name"]);
    const other = await gw.post("/v1/labels", { name: "later" }, as(t));
    const renamed = await gw.patch(`/v1/labels/${other.body.id}`, { name: "URGENT", color: "#000000" }, as(t));
    expect(renamed.status, renamed.text).toBe(400);
    expect(pointersOf(renamed.body)).toEqual(["/name"]);
    expect((await gw.get(`/v1/labels/${other.body.id}`, as(t))).body).toMatchObject({ name: "later", color: DEFAULT_LABEL_COLOR });
    expect(await labelCount(t.organizationId)).toBe(2);
    // Unique in an organization only.
    expect((await gw.post("/v1/labels", { name: "urgent" }, as(await f.tenant()))).status).toBe(201);
  });

  it("when the body breaks a rule, then 400 naming the field and no label is made", async () => {
    const t = await f.tenant();
    for (const [body, pointer] of [
      [{ name: "" }, "/name"],
      [{ name: "   " }, "/name"],
      [{ name: "x".repeat(101) }, "/name"],
      [{ name: "x", color: "red" }, "/color"],
      [{ name: "x", color: "#12345" }, "/color"],
      [{ name: "x", color: "#1234567" }, "/color"],
      [{ name: "x", color: "#gg0000" }, "/color"],
      [{ name: "x", description: "d".repeat(501) }, "/description"],
      [{ name: "x", other: 1 }, ""],
    ] as const) {
      const r = await gw.post("/v1/labels", body, as(t));
      expect(r.status, JSON.stringify(body)).toBe(400);
      if (pointer !== "") expect(pointersOf(r.body), JSON.stringify(body)).toContain(pointer);
    }
    // A name of exactly 100 characters after trimming is allowed.
    expect((await gw.post("/v1/labels", { name: ` ${"n".repeat(100)} ` }, as(t))).status).toBe(201);
    expect(await labelCount(t.organizationId)).toBe(1);
    const label = (await gw.get("/v1/labels", as(t))).body.data[0];
    const bad = await gw.patch(`/v1/labels/${label.id}`, { color: "blue" }, as(t));
    expect(bad.status).toBe(400);
    expect(pointersOf(bad.body)).toContain("/color");
  });

  it("when listed, then by name ignoring case, a page at a time with the cursor", async () => {
    const t = await f.tenant();
    for (const name of ["gamma", "Beta", "delta", "alpha", "Epsilon"]) expect((await gw.post("/v1/labels", { name }, as(t))).status).toBe(201);
    const names: string[] = [];
    let path = "/v1/labels?limit=2";
    for (let pages = 0; pages < 10; pages++) {
      const r = await gw.get(path, as(t));
      expect(r.status, r.text).toBe(200);
      expect(r.body.data.length).toBeLessThanOrEqual(2);
      names.push(...r.body.data.map((l: { name: string }) => l.name));
      if (!r.body.has_more) break;
      path = `/v1/labels?limit=2&after=${encodeURIComponent(r.body.next_cursor)}`;
    }
    expect(names).toEqual(["alpha", "Beta", "delta", "Epsilon", "gamma"]);
    // Another organization sees none of them.
    expect((await gw.get("/v1/labels", as(await f.tenant()))).body).toEqual({ data: [], has_more: false, next_cursor: null });
  });

  it("when another organization's label is read, patched or deleted, then 404 and nothing changes", async () => {
    const owner = await f.tenant();
    const other = await f.tenant();
    const theirs = (await gw.post("/v1/labels", { name: "theirs" }, as(owner))).body;
    for (const r of [
      await gw.get(`/v1/labels/${theirs.id}`, as(other)),
      await gw.patch(`/v1/labels/${theirs.id}`, { name: "mine" }, as(other)),
      await gw.delete(`/v1/labels/${theirs.id}`, as(other)),
      await gw.get("/v1/labels/lbl_doesnotexist", as(owner)),
    ]) {
      expect(r.status, r.text).toBe(404);
      expect(r.body.code).toBe("resource_not_found");
    }
    expect((await gw.get(`/v1/labels/${theirs.id}`, as(owner))).body).toEqual(theirs);
  });

  it("when a token has tasks:write but not projects:write, then it may read labels but not write them", async () => {
    const t = await f.tenant();
    const label = (await gw.post("/v1/labels", { name: "kept" }, as(t))).body;
    const token = await f.token(t.organizationId, t.userId, ["tasks:read", "tasks:write"]);
    for (const r of [
      await gw.post("/v1/labels", { name: "new" }, { token }),
      await gw.patch(`/v1/labels/${label.id}`, { name: "changed" }, { token }),
      await gw.delete(`/v1/labels/${label.id}`, { token }),
    ]) {
      expect(r.status, r.text).toBe(403);
      expect(r.body.code).toBe("insufficient_scope");
    }
    expect((await gw.get("/v1/labels", { token })).body.data).toEqual([label]);
    expect((await gw.get(`/v1/labels/${label.id}`, { token })).body).toEqual(label);
  });

  it("when a create is sent again with its Idempotency-Key, then the first answer is replayed and one label exists", async () => {
    const t = await f.tenant();
    const headers = { "idempotency-key": "create-label-once" };
    const first = await gw.post("/v1/labels", { name: "once", color: "#0e8a16" }, as(t, headers));
    expect(first.status, first.text).toBe(201);
    // Through the other replica too: the tasks service keeps the key with the label it made.
    for (const replica of [gw, gw2]) {
      const again = await replica.post("/v1/labels", { name: "once", color: "#0e8a16" }, as(t, headers));
      expect(again.status, again.text).toBe(201);
      expect(again.headers.get("idempotency-replayed")).toBe("true");
      expect(again.body).toEqual(first.body);
      expect(again.headers.get("location")).toBe(`/v1/labels/${first.body.id}`);
    }
    expect(await labelCount(t.organizationId)).toBe(1);
    // The same key for another body is refused, not replayed.
    const other = await gw.post("/v1/labels", { name: "twice" }, as(t, headers));
    expect(other.status, other.text).toBe(422);
    expect(await labelCount(t.organizationId)).toBe(1);
  });
});
