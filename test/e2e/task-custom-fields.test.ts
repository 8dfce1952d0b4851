import { randomUUID } from "node:crypto";
import { e2eContext, eventually, pointersOf, type Tenant } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";

// Custom field values on tasks: checked per type, merged on write, a change per key in events,
// found and sorted by them, and a deleted field or option leaves every task while reads never show it.
const { gw, f, events, db } = e2eContext();

type Field = { id: string; key: string; options: Array<{ id: string; name: string }> };
const field = async (t: Tenant, body: Record<string, unknown>): Promise<Field> => {
  const r = await gw.post("/v1/custom-fields", body, { token: t.apiKey, headers: { "idempotency-key": randomUUID() } });
  expect(r.status, r.text).toBe(201);
  return r.body as Field;
};
const create = (t: Tenant, custom: Record<string, unknown>, title = "t") => gw.post("/v1/tasks", { title, custom_fields: custom }, { token: t.apiKey });
const patch = (t: Tenant, id: string, custom: Record<string, unknown>) => gw.patch(`/v1/tasks/${id}`, { custom_fields: custom }, { token: t.apiKey });
const search = async (t: Tenant, body: Record<string, unknown>) => {
  const r = await gw.post("/v1/tasks/search", body, { token: t.apiKey });
  expect(r.status, r.text).toBe(200);
  return (r.body.data as Array<{ title: string }>).map((x) => x.title);
};

async function allTypes(t: Tenant) {
  const customer = await field(t, { key: "customer", name: "Customer", type: "select", options: [{ name: "Acme" }, { name: "Globex" }] });
  const tags = await field(t, { key: "tags", name: "Tags", type: "multi_select", options: [{ name: "a" }, { name: "b" }, { name: "c" }] });
  for (const [key, type] of [
    ["notes_x", "text"],
    ["estimate", "number"],
    ["release", "date"],
    ["reviewer", "user"],
    ["done", "checkbox"],
    ["link", "url"],
  ] as const)
    await field(t, { key, name: key, type });
  return { customer, tags };
}

describe("custom field values", () => {
  it("when every type is written, then each is stored and shown by key; bad values are 400 at /custom_fields/<key> and nothing is written", async () => {
    const t = await f.tenant();
    const { customer, tags } = await allTypes(t);
    const acme = customer.options[0]?.id ?? "";
    const values = {
      notes_x: "hello",
      estimate: 2.5,
      release: "2026-12-24",
      customer: acme,
      tags: [tags.options[1]?.id, tags.options[0]?.id],
      reviewer: t.userId,
      done: true,
      link: "https://example.com/a",
    };
    const r = await create(t, values);
    expect(r.status, r.text).toBe(201);
    expect(r.body.custom_fields).toEqual(values);
    expect((await gw.get(`/v1/tasks/${r.body.id}`, { token: t.apiKey })).body.custom_fields).toEqual(values);
    const before = Number((await db`select count(*)::int as n from tasks.tasks where organization_id = ${t.organizationId}`)[0]?.["n"]);
    for (const [key, value] of [
      ["estimate", "3"],
      ["release", "2026-02-30"],
      ["customer", "opt_nope"],
      ["tags", []],
      ["tags", [acme]],
      ["reviewer", "usr_nobody"],
      ["done", "yes"],
      ["link", "ftp://example.com"],
      ["notes_x", "x".repeat(10_001)],
      ["unknown", 1],
    ] as const) {
      const bad = await create(t, { [key]: value });
      expect(bad.status, `${key}: ${bad.text}`).toBe(400);
      expect(pointersOf(bad.body)).toEqual([`/custom_fields/${key}`]);
    }
    expect(Number((await db`select count(*)::int as n from tasks.tasks where organization_id = ${t.organizationId}`)[0]?.["n"])).toBe(before);
  });

  it("when a write names some keys, then those are set or cleared and the others stay; the event says only the keys that changed", async () => {
    const t = await f.tenant();
    await allTypes(t);
    const made = (await create(t, { estimate: 1, release: "2026-01-01" })).body;
    const mark = await events.mark();
    const r = await patch(t, made.id, { estimate: 2, release: null, done: false });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ version: 2, custom_fields: { done: false, estimate: 2 } });
    expect(r.body.custom_fields).not.toHaveProperty("release");
    const [updated] = await events.await(mark, t.organizationId, 1);
    expect(updated?.changes?.["custom_fields"]).toEqual({
      from: { estimate: 1, release: "2026-01-01", done: null },
      to: { estimate: 2, release: null, done: false },
    });
    // The same values again: no version.
    expect((await patch(t, made.id, { estimate: 2, done: false })).body.version).toBe(2);
    expect((await gw.get(`/v1/tasks/${made.id}/history`, { token: t.apiKey })).body.data[1].custom_fields).toEqual({ estimate: 1, release: "2026-01-01" });
  });

  it("when searched with custom.<key> by each type's ops and sorted by a number, then exactly the matching tasks in order; a wrong op or key is 400 at its pointer", async () => {
    const t = await f.tenant();
    const { customer, tags } = await allTypes(t);
    const [acme, globex] = [customer.options[0]?.id ?? "", customer.options[1]?.id ?? ""];
    const [a, b] = [tags.options[0]?.id ?? "", tags.options[1]?.id ?? ""];
    await create(t, { estimate: 5, customer: acme, tags: [a], release: "2026-03-01", done: true, reviewer: t.userId }, "five");
    await create(t, { estimate: 1, customer: globex, tags: [a, b], release: "2026-01-01" }, "one");
    await create(t, { estimate: 3, notes_x: "Quarterly Review" }, "three");
    await create(t, {}, "none");
    const where = (field: string, op: string, value: unknown) => ({ filter: { field: `custom.${field}`, op, value } });
    expect(await search(t, where("customer", "eq", acme))).toEqual(["five"]);
    expect((await search(t, where("customer", "nin", [acme]))).sort()).toEqual(["none", "one", "three"]);
    expect((await search(t, where("tags", "contains", b))).sort()).toEqual(["one"]);
    expect((await search(t, where("tags", "in", [a, b]))).sort()).toEqual(["five", "one"]);
    expect(await search(t, { ...where("estimate", "gte", 2), sort: "custom.estimate" })).toEqual(["three", "five"]);
    expect(await search(t, { ...where("estimate", "is_null", false), sort: "-custom.estimate" })).toEqual(["five", "three", "one"]);
    expect(await search(t, where("release", "lt", "2026-02-01"))).toEqual(["one"]);
    expect(await search(t, where("notes_x", "contains", "review"))).toEqual(["three"]);
    expect(await search(t, where("reviewer", "eq", "me"))).toEqual(["five"]);
    expect((await search(t, where("done", "eq", false))).sort()).toEqual(["none", "one", "three"]);
    expect((await search(t, where("estimate", "is_null", true))).sort()).toEqual(["none"]);
    const list = await gw.get("/v1/tasks?sort=custom.estimate", { token: t.apiKey });
    expect(list.body.data.map((x: { title: string }) => x.title)).toEqual(["one", "three", "five", "none"]);
    for (const [body, pointer] of [
      [where("customer", "lt", acme), "/filter/op"],
      [where("nothing", "eq", 1), "/filter/field"],
      [where("estimate", "eq", "1"), "/filter/value"],
      [{ filter: { field: "archived", op: "eq", value: false }, sort: "custom.customer" }, "/sort"],
    ] as const) {
      const r = await gw.post("/v1/tasks/search", body, { token: t.apiKey });
      expect(r.status, r.text).toBe(400);
      expect(pointersOf(r.body)).toEqual([pointer]);
    }
  });

  it("when a select option and then a field are deleted, then reads never show them, and each task carrying them gets one version without them", async () => {
    const t = await f.tenant();
    const { customer, tags } = await allTypes(t);
    const [acme, globex] = [customer.options[0]?.id ?? "", customer.options[1]?.id ?? ""];
    const [a, b] = [tags.options[0]?.id ?? "", tags.options[1]?.id ?? ""];
    const x = (await create(t, { customer: acme, tags: [a, b], estimate: 1 }, "x")).body;
    const y = (await create(t, { customer: globex, tags: [a], estimate: 2 }, "y")).body;
    // The option "a" goes: x keeps b, y's tags have no value left.
    const kept = tags.options.filter((o) => o.id !== a).map((o) => ({ id: o.id, name: o.name }));
    expect((await gw.patch(`/v1/custom-fields/${tags.id}`, { options: kept }, { token: t.apiKey })).status).toBe(200);
    expect((await gw.get(`/v1/tasks/${x.id}`, { token: t.apiKey })).body.custom_fields).toEqual({ tags: [b], customer: acme, estimate: 1 });
    expect((await gw.get(`/v1/tasks/${y.id}`, { token: t.apiKey })).body.custom_fields).toEqual({ customer: globex, estimate: 2 });
    expect(await search(t, { filter: { field: "custom.tags", op: "contains", value: a } })).toEqual([]);
    // The field "customer" goes.
    expect((await gw.delete(`/v1/custom-fields/${customer.id}`, { token: t.apiKey })).status).toBe(200);
    expect((await gw.get(`/v1/tasks/${x.id}`, { token: t.apiKey })).body.custom_fields).toEqual({ tags: [b], estimate: 1 });
    const stored = async () => db`select custom_fields from tasks.tasks where organization_id = ${t.organizationId} order by number`;
    await eventually(
      async () => JSON.stringify((await stored()).map((r) => r["custom_fields"])) === JSON.stringify([{ tags: [b], estimate: 1 }, { estimate: 2 }]),
      {
        what: "the option and the field removed from the stored tasks",
        timeoutMs: 30_000,
      },
    );
    await eventually(async () => (await db`select 1 from tasks.removals where organization_id = ${t.organizationId}`).length === 0, {
      what: "the removals done",
    });
    const versions =
      await db`select task_number, count(*)::int as n from tasks.task_versions where organization_id = ${t.organizationId} group by 1 order by 1`;
    expect(versions.map((v) => v["n"])).toEqual([3, 3]);
  }, 60_000);
});
