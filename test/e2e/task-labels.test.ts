import { randomUUID } from "node:crypto";
import { e2eContext, eventually, pointersOf, type Tenant } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";

// Labels on tasks: checked against the organization's labels, a change is a version, found by
// label, and a deleted label leaves every task (a version and an event each) while reads never show it.
const { gw, f, events, db } = e2eContext();

const label = async (t: Tenant, name: string) => {
  const r = await gw.post("/v1/labels", { name }, { token: t.apiKey, headers: { "idempotency-key": randomUUID() } });
  expect(r.status, r.text).toBe(201);
  return r.body.id as string;
};
const create = (t: Tenant, body: Record<string, unknown>) => gw.post("/v1/tasks", body, { token: t.apiKey });
const ids = (r: { body: { data: Array<{ id: string }> } }) => r.body.data.map((x) => x.id).sort();
/** Hundreds of writes in a few seconds: past a plan's burst window. */
async function busyTenant(): Promise<Tenant> {
  const t = await f.tenant("team");
  await f.admin("setLimits", { org: t.organizationId, burst: 1_000_000 });
  return t;
}
const stored = async (orgId: string, label: string) =>
  Number((await db`select count(*)::int as n from tasks.tasks where organization_id = ${orgId} and ${label} = any(label_ids)`)[0]?.["n"]);

describe("labels on tasks", () => {
  it("when a task is created and changed with labels, then they show in order, in history, and a change is a version with changes.label_ids", async () => {
    const t = await f.tenant();
    const [bug, ui] = [await label(t, "bug"), await label(t, "ui")];
    const made = await create(t, { title: "fix it", label_ids: [ui, bug] });
    expect(made.status, made.text).toBe(201);
    expect(made.body.label_ids).toEqual([ui, bug]);
    const mark = await events.mark();
    const r = await gw.patch(`/v1/tasks/${made.body.id}`, { label_ids: [bug] }, { token: t.apiKey });
    expect(r.body).toMatchObject({ version: 2, label_ids: [bug] });
    const [updated] = await events.await(mark, t.organizationId, 1);
    expect(updated?.changes).toMatchObject({ label_ids: { from: [ui, bug], to: [bug] } });
    const history = await gw.get(`/v1/tasks/${made.body.id}/history`, { token: t.apiKey });
    expect(history.body.data.map((v: { label_ids: string[] }) => v.label_ids)).toEqual([[bug], [ui, bug]]);
    expect((await gw.patch(`/v1/tasks/${made.body.id}`, { label_ids: [bug] }, { token: t.apiKey })).body.version).toBe(2);
  });

  it("when a label id is unknown, another organization's, repeated or one too many, then 400 at its pointer and nothing is written", async () => {
    const t = await f.tenant();
    const other = await f.tenant();
    const mine = await label(t, "mine");
    const theirs = await label(other, "theirs");
    for (const [labelIds, pointer] of [
      [[mine, theirs], "/label_ids/1"],
      [["lbl_nothing"], "/label_ids/0"],
      [[mine, mine], "/label_ids"],
      [Array.from({ length: 21 }, (_, i) => `lbl_${i}`), "/label_ids"],
    ] as const) {
      const r = await create(t, { title: "x", label_ids: labelIds });
      expect(r.status, r.text).toBe(400);
      expect(pointersOf(r.body)).toEqual([pointer]);
    }
    const task = (await create(t, { title: "kept" })).body;
    const r = await gw.patch(`/v1/tasks/${task.id}`, { title: "renamed", label_ids: [theirs] }, { token: t.apiKey });
    expect(pointersOf(r.body)).toEqual(["/label_ids/0"]);
    expect((await gw.get(`/v1/tasks/${task.id}`, { token: t.apiKey })).body).toMatchObject({ title: "kept", version: 1, label_ids: [] });
    expect(Number((await db`select count(*)::int as n from tasks.tasks where organization_id = ${t.organizationId}`)[0]?.["n"])).toBe(1);
  });

  it("when listed by label_id and searched by label_ids, then exactly the matching tasks", async () => {
    const t = await f.tenant();
    const [a, b] = [await label(t, "a"), await label(t, "b")];
    const onlyA = (await create(t, { title: "a", label_ids: [a] })).body.id;
    const both = (await create(t, { title: "ab", label_ids: [b, a] })).body.id;
    const none = (await create(t, { title: "none" })).body.id;
    const get = (q: string) => gw.get(`/v1/tasks?${q}`, { token: t.apiKey });
    expect(ids(await get(`label_id=${a}`))).toEqual([onlyA, both].sort());
    expect(ids(await get(`label_id=${b},lbl_other`))).toEqual([both]);
    const search = async (filter: unknown) => ids(await gw.post("/v1/tasks/search", { filter }, { token: t.apiKey }));
    expect(await search({ field: "label_ids", op: "contains", value: b })).toEqual([both]);
    expect(await search({ field: "label_ids", op: "in", value: [a, b] })).toEqual([onlyA, both].sort());
    expect(await search({ field: "label_ids", op: "nin", value: [b] })).toEqual([onlyA, none].sort());
    expect(await search({ field: "label_ids", op: "is_null", value: true })).toEqual([none]);
    expect(await search({ not: { field: "label_ids", op: "is_null", value: true } })).toEqual([onlyA, both].sort());
  });
});

describe("deleting a label", () => {
  it("when a label on 250 tasks is deleted, then no read shows it at once, and each task gets one new version and one task.updated without it", async () => {
    const t = await busyTenant();
    const [gone, kept] = [await label(t, "gone"), await label(t, "kept")];
    for (let b = 0; b < 3; b++) {
      const operations = Array.from({ length: b < 2 ? 100 : 50 }, (_, i) => ({ method: "create", body: { title: `t${b}-${i}`, label_ids: [gone, kept] } }));
      const r = await gw.post("/v1/tasks/batch", { operations }, { token: t.apiKey, headers: { "idempotency-key": randomUUID() } });
      expect(r.status, r.text).toBe(200);
    }
    const mark = await events.mark();
    const del = await gw.delete(`/v1/labels/${gone}`, { token: t.apiKey });
    expect(del.status, del.text).toBe(200);
    expect(del.body).toEqual({ id: gone });
    // At once, whatever the background work has reached.
    const page = await gw.get("/v1/tasks?limit=100", { token: t.apiKey });
    for (const task of page.body.data) expect(task.label_ids).toEqual([kept]);
    expect((await gw.get(`/v1/tasks/T-1`, { token: t.apiKey })).body.label_ids).toEqual([kept]);
    expect((await gw.post("/v1/tasks/search", { filter: { field: "label_ids", op: "contains", value: gone } }, { token: t.apiKey })).body.data).toEqual([]);
    expect((await gw.get(`/v1/tasks?label_id=${gone}`, { token: t.apiKey })).body.data).toEqual([]);
    await eventually(async () => (await stored(t.organizationId, gone)) === 0, { what: "the label removed from every task", timeoutMs: 60_000 });
    await eventually(async () => (await db`select 1 from tasks.removals where organization_id = ${t.organizationId}`).length === 0, {
      what: "the removal finished",
    });
    const versions = await db`select task_number, count(*)::int as n from tasks.task_versions where organization_id = ${t.organizationId} group by 1`;
    expect(versions).toHaveLength(250);
    expect(versions.every((v) => v["n"] === 2)).toBe(true);
    const updates = await events.await(mark, t.organizationId, 250);
    expect(
      updates.every((e) => e.type === "task.updated" && JSON.stringify(e.changes?.["label_ids"]) === JSON.stringify({ from: [gone, kept], to: [kept] })),
    ).toBe(true);
    // History keeps what it said.
    expect((await gw.get("/v1/tasks/T-1/history", { token: t.apiKey })).body.data[1].label_ids).toEqual([gone, kept]);
  }, 90_000);

  it("when writers keep setting a label while it is deleted, then every write either lands before and is stripped, or is refused at /label_ids: none keeps it", async () => {
    const t = await busyTenant();
    const [doomed, other] = [await label(t, "doomed"), await label(t, "other")];
    const tasks: string[] = [];
    for (let i = 0; i < 20; i++) tasks.push((await create(t, { title: `w${i}` })).body.id);
    let stop = false;
    const statuses: number[] = [];
    const writer = async (n: number) => {
      for (let round = 0; !stop; round++) {
        const id = tasks[(n * 7 + round) % tasks.length] ?? "T-1";
        const r = await gw.patch(`/v1/tasks/${id}`, { label_ids: round % 2 ? [doomed, other] : [other, doomed], notes: `${n}/${round}` }, { token: t.apiKey });
        statuses.push(r.status);
        if (r.status === 400) expect(pointersOf(r.body)[0]).toMatch(/^\/label_ids/);
      }
    };
    const writers = [0, 1, 2, 3].map(writer);
    await new Promise((r) => setTimeout(r, 300));
    expect((await gw.delete(`/v1/labels/${doomed}`, { token: t.apiKey })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 300));
    stop = true;
    await Promise.all(writers);
    expect(statuses.filter((s) => s !== 200 && s !== 400)).toEqual([]);
    expect(statuses).toContain(400);
    await eventually(async () => (await stored(t.organizationId, doomed)) === 0, { what: "no task keeps the deleted label", timeoutMs: 60_000 });
    await eventually(async () => (await db`select 1 from tasks.removals where organization_id = ${t.organizationId}`).length === 0, {
      what: "the removal finished",
    });
    expect(await stored(t.organizationId, doomed)).toBe(0);
    // No lost update: each task's last note is a write that answered 200.
    const notes = await db`select notes from tasks.tasks where organization_id = ${t.organizationId} and notes is not null`;
    expect(notes.length).toBeGreaterThan(0);
  }, 90_000);
});
