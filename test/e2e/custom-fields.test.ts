import { CUSTOM_FIELD_TYPES, DEFAULT_OPTION_COLOR, MAX_CUSTOM_FIELDS } from "@tasksvc/contracts";
import { e2eContext, type Tenant } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";

// The organization's custom field definitions through the HTTP API: a fixed key and type, options
// for the select types with ids of their own, at most fifty fields, a page oldest first.
const { gw, gw2, f, db } = e2eContext();

const as = (t: Tenant, headers: Record<string, string> = {}) => ({ token: t.apiKey, headers });
const fieldCount = async (orgId: string) => Number((await db`select count(*)::int as n from tasks.custom_fields where organization_id = ${orgId}`)[0]?.["n"]);
const pointersOf = (body: { errors?: Array<{ pointer: string }> }) => (body.errors ?? []).map((e) => e.pointer);
const OPTION_TYPES = new Set(["select", "multi_select"]);
const bodyOf = (type: string, key = type) =>
  OPTION_TYPES.has(type) ? { key, name: `A ${type}`, type, options: [{ name: "One" }, { name: "Two", color: "#0E8A16" }] } : { key, name: `A ${type}`, type };

interface Option {
  id: string;
  name: string;
  color: string;
}

describe("custom fields", () => {
  it("when one of every type is created, then 201 with Location; only the select types have options, with ids made by the service; listed oldest first", async () => {
    const t = await f.tenant();
    const made = [];
    for (const type of CUSTOM_FIELD_TYPES) {
      const r = await gw.post("/v1/custom-fields", bodyOf(type), as(t));
      expect(r.status, r.text).toBe(201);
      expect(r.body).toEqual({
        id: expect.stringMatching(/^fld_/),
        key: type,
        name: `A ${type}`,
        type,
        options: OPTION_TYPES.has(type)
          ? [
              { id: expect.stringMatching(/^opt_/), name: "One", color: DEFAULT_OPTION_COLOR },
              { id: expect.stringMatching(/^opt_/), name: "Two", color: "#0e8a16" },
            ]
          : [],
        description: null,
        created_at: expect.any(String),
        updated_at: r.body.created_at,
      });
      expect(r.headers.get("location")).toBe(`/v1/custom-fields/${r.body.id}`);
      expect((await gw.get(`/v1/custom-fields/${r.body.id}`, as(t))).body).toEqual(r.body);
      made.push(r.body);
    }
    const listed = [];
    let path = "/v1/custom-fields?limit=3";
    for (let pages = 0; pages < 10; pages++) {
      const r = await gw.get(path, as(t));
      expect(r.status, r.text).toBe(200);
      expect(r.body.data.length).toBeLessThanOrEqual(3);
      listed.push(...r.body.data);
      if (!r.body.has_more) break;
      path = `/v1/custom-fields?limit=3&after=${encodeURIComponent(r.body.next_cursor)}`;
    }
    expect(listed).toEqual(made);
    expect((await gw.get("/v1/custom-fields", as(await f.tenant()))).body).toEqual({ data: [], has_more: false, next_cursor: null });
  });

  it("when patched, then the name and description change and the key and type stay; when deleted, then 200 { id } and it is gone", async () => {
    const t = await f.tenant();
    const field = (await gw.post("/v1/custom-fields", { key: "estimate", name: "  Estimate ", type: "number" }, as(t))).body;
    expect(field).toMatchObject({ name: "Estimate", description: null });
    const patched = await gw.patch(`/v1/custom-fields/${field.id}`, { name: "Estimate (days)", description: "Ideal days." }, as(t));
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body).toMatchObject({
      id: field.id,
      key: "estimate",
      type: "number",
      name: "Estimate (days)",
      description: "Ideal days.",
      created_at: field.created_at,
    });
    expect((await gw.patch(`/v1/custom-fields/${field.id}`, { description: null }, as(t))).body.description).toBeNull();

    const deleted = await gw.delete(`/v1/custom-fields/${field.id}`, as(t));
    expect(deleted.status, deleted.text).toBe(200);
    expect(deleted.body).toEqual({ id: field.id });
    expect((await gw.get(`/v1/custom-fields/${field.id}`, as(t))).status).toBe(404);
    const again = await gw.delete(`/v1/custom-fields/${field.id}`, as(t));
    expect(again.status).toBe(404);
    expect(again.body.code).toBe("resource_not_found");
    expect(await fieldCount(t.organizationId)).toBe(0);
  });

  it("when a key breaks its pattern or is taken, or a PATCH names the key or the type, then 400 at that field and nothing changes", async () => {
    const t = await f.tenant();
    for (const key of ["", "Estimate", "1st", "_x", "with-dash", "with space", "é", "k".repeat(41)]) {
      const r = await gw.post("/v1/custom-fields", { key, name: "x", type: "text" }, as(t));
      expect(r.status, key).toBe(400);
      expect(pointersOf(r.body), key).toEqual(["/key"]);
    }
    expect((await gw.post("/v1/custom-fields", { key: `a${"_9".repeat(19)}b`, name: "x", type: "text" }, as(t))).status).toBe(201);
    const field = (await gw.post("/v1/custom-fields", { key: "points", name: "Points", type: "number" }, as(t))).body;
    const taken = await gw.post("/v1/custom-fields", { key: "points", name: "Other points", type: "text" }, as(t));
    expect(taken.status, taken.text).toBe(400);
    expect(taken.body.code).toBe("validation_failed");
    expect(pointersOf(taken.body)).toEqual(["/key"]);
    for (const [patch, pointer] of [
      [{ key: "renamed" }, "/key"],
      [{ type: "text" }, "/type"],
      [{ name: "Kept?", type: "number" }, "/type"],
    ] as const) {
      const r = await gw.patch(`/v1/custom-fields/${field.id}`, patch, as(t));
      expect(r.status, JSON.stringify(patch)).toBe(400);
      expect(pointersOf(r.body)).toEqual([pointer]);
    }
    expect((await gw.get(`/v1/custom-fields/${field.id}`, as(t))).body).toEqual(field);
    for (const [body, pointer] of [
      [{ key: "k", name: "x", type: "colour" }, "/type"],
      [{ key: "k", name: "x" }, "/type"],
      [{ key: "k", name: "  ", type: "text" }, "/name"],
      [{ key: "k", name: "n".repeat(101), type: "text" }, "/name"],
      [{ key: "k", name: "x", type: "text", description: "d".repeat(501) }, "/description"],
    ] as const) {
      const r = await gw.post("/v1/custom-fields", body, as(t));
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(pointersOf(r.body), JSON.stringify(body)).toContain(pointer);
    }
    expect(await fieldCount(t.organizationId)).toBe(2);
    // Unique in an organization only.
    expect((await gw.post("/v1/custom-fields", { key: "points", name: "Points", type: "text" }, as(await f.tenant()))).status).toBe(201);
  });

  it("when options come with a type that has none, or are missing, too many, clashing or miscoloured, then 400 at /options…", async () => {
    const t = await f.tenant();
    const options = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `Option ${i}` }));
    for (const [body, pointer] of [
      [{ key: "k", name: "x", type: "text", options: [{ name: "a" }] }, "/options"],
      [{ key: "k", name: "x", type: "checkbox", options: [] }, "/options"],
      [{ key: "k", name: "x", type: "select" }, "/options"],
      [{ key: "k", name: "x", type: "multi_select", options: [] }, "/options"],
      [{ key: "k", name: "x", type: "select", options: options(101) }, "/options"],
      [{ key: "k", name: "x", type: "select", options: [{ name: "High" }, { name: " high " }] }, "/options/1/name"],
      [{ key: "k", name: "x", type: "select", options: [{ name: "" }] }, "/options/0/name"],
      [{ key: "k", name: "x", type: "select", options: [{ name: "a", color: "red" }] }, "/options/0/color"],
      [{ key: "k", name: "x", type: "select", options: [{ id: "opt_mine", name: "a" }] }, "/options/0/id"],
    ] as const) {
      const r = await gw.post("/v1/custom-fields", body, as(t));
      expect(r.status, JSON.stringify(body).slice(0, 200)).toBe(400);
      expect(pointersOf(r.body), JSON.stringify(body).slice(0, 200)).toEqual([pointer]);
    }
    expect(await fieldCount(t.organizationId)).toBe(0);
    expect((await gw.post("/v1/custom-fields", { key: "k", name: "x", type: "multi_select", options: options(100) }, as(t))).status).toBe(201);
    const url = (await gw.post("/v1/custom-fields", { key: "link", name: "Link", type: "url" }, as(t))).body;
    const r = await gw.patch(`/v1/custom-fields/${url.id}`, { options: [{ name: "a" }] }, as(t));
    expect(r.status, r.text).toBe(400);
    expect(pointersOf(r.body)).toEqual(["/options"]);
    expect((await gw.get(`/v1/custom-fields/${url.id}`, as(t))).body).toEqual(url);
  });

  it("when a PATCH replaces the options, then a kept option keeps its id (renamed, recoloured), a new one gets an id, and one left out leaves the list", async () => {
    const t = await f.tenant();
    const created = await gw.post(
      "/v1/custom-fields",
      { key: "stage", name: "Stage", type: "select", options: [{ name: "Idea" }, { name: "Doing", color: "#fbca04" }, { name: "Done" }] },
      as(t),
    );
    const [idea, doing, done] = created.body.options as Option[];
    if (!idea || !doing || !done) throw new Error("three options expected");
    const patched = await gw.patch(
      `/v1/custom-fields/${created.body.id}`,
      {
        options: [
          { id: doing.id, name: "In progress" },
          { name: "Blocked", color: "#B60205" },
          { id: idea.id, name: "Idea", color: "#C5DEF5" },
        ],
      },
      as(t),
    );
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.options).toEqual([
      { id: doing.id, name: "In progress", color: "#fbca04" },
      { id: expect.stringMatching(/^opt_/), name: "Blocked", color: "#b60205" },
      { id: idea.id, name: "Idea", color: "#c5def5" },
    ]);
    const blocked = patched.body.options[1] as Option;
    expect([idea.id, doing.id, done.id]).not.toContain(blocked.id);
    expect((await gw.get(`/v1/custom-fields/${created.body.id}`, as(t))).body).toEqual(patched.body);

    // Refused whole: an id that is not (or no longer) the field's, one listed twice, a name clash.
    for (const [options, pointer] of [
      [[{ id: done.id, name: "Done again" }], "/options/0/id"],
      [
        [
          { id: idea.id, name: "A" },
          { id: idea.id, name: "B" },
        ],
        "/options/1/id",
      ],
      [
        [
          { id: idea.id, name: "Blocked" },
          { id: blocked.id, name: "BLOCKED" },
        ],
        "/options/1/name",
      ],
      [[{ name: "idea" }, { id: idea.id, name: "Idea" }], "/options/1/name"],
    ] as const) {
      const r = await gw.patch(`/v1/custom-fields/${created.body.id}`, { name: "changed", options }, as(t));
      expect(r.status, JSON.stringify(options)).toBe(400);
      expect(pointersOf(r.body), JSON.stringify(options)).toEqual([pointer]);
    }
    expect((await gw.get(`/v1/custom-fields/${created.body.id}`, as(t))).body).toEqual(patched.body);
  });

  it(`when an organization has ${MAX_CUSTOM_FIELDS} fields, then another is 400 naming the body, also when creates race for the last place`, async () => {
    const t = await f.tenant();
    for (let i = 0; i < MAX_CUSTOM_FIELDS - 1; i++) expect((await gw.post("/v1/custom-fields", bodyOf("text", `f${i}`), as(t))).status).toBe(201);
    // Creates through both replicas at once for the last place: exactly one takes it. A few rounds,
    // each after a place is freed, since a race lost by timing alone passes now and then.
    for (let round = 0; round < 3; round++) {
      const racing = await Promise.all(
        Array.from({ length: 10 }, (_, i) => (i % 2 ? gw : gw2).post("/v1/custom-fields", bodyOf("number", `race${round}_${i}`), as(t))),
      );
      expect(racing.map((r) => r.status).sort()).toEqual([201, ...Array(9).fill(400)]);
      for (const r of racing.filter((x) => x.status === 400)) {
        expect(r.body.code).toBe("validation_failed");
        expect(pointersOf(r.body)).toEqual(["/"]);
        expect(r.body.detail).toMatch(/at most 50 custom fields/);
      }
      expect(await fieldCount(t.organizationId)).toBe(MAX_CUSTOM_FIELDS);
      const winner = racing.find((r) => r.status === 201)?.body;
      expect((await gw.delete(`/v1/custom-fields/${winner.id}`, as(t))).status).toBe(200);
    }
    expect((await gw.post("/v1/custom-fields", bodyOf("select", "last"), as(t))).status).toBe(201);
    const over = await gw.post("/v1/custom-fields", bodyOf("select", "one_more"), as(t));
    expect(over.status, over.text).toBe(400);
    expect(pointersOf(over.body)).toEqual(["/"]);
    // Another organization is not counted with this one.
    expect((await gw.post("/v1/custom-fields", bodyOf("text"), as(await f.tenant()))).status).toBe(201);
  });

  it("when a deleted field's values are still being taken off tasks, then its key cannot be taken again until that ends", async () => {
    const t = await f.tenant();
    // The removal work's mark, as a delete leaves it while that work runs.
    await db`insert into tasks.removals (organization_id, kind, ref, field_key) values (${t.organizationId}, 'field', 'fld_gone', 'severity')`;
    const r = await gw.post("/v1/custom-fields", bodyOf("text", "severity"), as(t));
    expect(r.status, r.text).toBe(400);
    expect(pointersOf(r.body)).toEqual(["/key"]);
    await db`delete from tasks.removals where organization_id = ${t.organizationId}`;
    expect((await gw.post("/v1/custom-fields", bodyOf("text", "severity"), as(t))).status).toBe(201);
  });

  it("when another organization's field is read, patched or deleted, then 404 and nothing changes", async () => {
    const owner = await f.tenant();
    const other = await f.tenant();
    const theirs = (await gw.post("/v1/custom-fields", bodyOf("select", "theirs"), as(owner))).body;
    for (const r of [
      await gw.get(`/v1/custom-fields/${theirs.id}`, as(other)),
      await gw.patch(`/v1/custom-fields/${theirs.id}`, { name: "mine" }, as(other)),
      await gw.patch(`/v1/custom-fields/${theirs.id}`, { options: [{ id: theirs.options[0].id, name: "mine" }] }, as(other)),
      await gw.delete(`/v1/custom-fields/${theirs.id}`, as(other)),
      await gw.get("/v1/custom-fields/fld_doesnotexist", as(owner)),
    ]) {
      expect(r.status, r.text).toBe(404);
      expect(r.body.code).toBe("resource_not_found");
    }
    expect((await gw.get(`/v1/custom-fields/${theirs.id}`, as(owner))).body).toEqual(theirs);
  });

  it("when a token has tasks:write but not projects:write, then it may read fields but not write them", async () => {
    const t = await f.tenant();
    const field = (await gw.post("/v1/custom-fields", bodyOf("date", "kept"), as(t))).body;
    const token = await f.token(t.organizationId, t.userId, ["tasks:read", "tasks:write"]);
    for (const r of [
      await gw.post("/v1/custom-fields", bodyOf("text", "new"), { token }),
      await gw.patch(`/v1/custom-fields/${field.id}`, { name: "changed" }, { token }),
      await gw.delete(`/v1/custom-fields/${field.id}`, { token }),
    ]) {
      expect(r.status, r.text).toBe(403);
      expect(r.body.code).toBe("insufficient_scope");
    }
    expect((await gw.get("/v1/custom-fields", { token })).body.data).toEqual([field]);
    expect((await gw.get(`/v1/custom-fields/${field.id}`, { token })).body).toEqual(field);
  });

  it("when a create is sent again with its Idempotency-Key, then the first answer is replayed (option ids too) and one field exists", async () => {
    const t = await f.tenant();
    const headers = { "idempotency-key": "create-field-once" };
    const body = bodyOf("multi_select", "tags");
    const first = await gw.post("/v1/custom-fields", body, as(t, headers));
    expect(first.status, first.text).toBe(201);
    for (const replica of [gw, gw2]) {
      const again = await replica.post("/v1/custom-fields", body, as(t, headers));
      expect(again.status, again.text).toBe(201);
      expect(again.headers.get("idempotency-replayed")).toBe("true");
      expect(again.body).toEqual(first.body);
      expect(again.headers.get("location")).toBe(`/v1/custom-fields/${first.body.id}`);
    }
    expect(await fieldCount(t.organizationId)).toBe(1);
    const other = await gw.post("/v1/custom-fields", bodyOf("text", "other"), as(t, headers));
    expect(other.status, other.text).toBe(422);
    expect(await fieldCount(t.organizationId)).toBe(1);
  });
});
