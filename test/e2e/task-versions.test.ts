import { Event, page, Task, TaskVersion } from "@tasksvc/contracts";
import { e2eContext, type Tenant, bodyOf, pointersOf } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";

// A task's version and ETag, and the conditional requests on it: If-Match on every write of the
// task (412 precondition_failed with the current ETag, nothing changed, exactly one winner among
// writers of one version), If-None-Match on a read (304).

const { gw, gw2, f } = e2eContext();

const auth = (t: Tenant, headers: Record<string, string> = {}) => ({ token: t.apiKey, headers });
async function newTask(t: Tenant, title = "Versioned"): Promise<Task> {
  const r = await gw.post("/v1/tasks", { title }, auth(t));
  expect(r.status, r.text).toBe(201);
  return bodyOf(r, Task);
}
const eventsOf = async (t: Tenant, id: string, type: string) =>
  bodyOf(await gw.get(`/v1/events?task_id=${id}&type=${type}&limit=100`, auth(t)), page(Event)).data.length;
const historyOf = async (t: Tenant, id: string) =>
  bodyOf(await gw.get(`/v1/tasks/${id}/history?limit=100`, auth(t)), page(TaskVersion)).data.map((v) => v.version);
const expect412 = (r: { status: number; text: string; headers: Headers; body: { code?: unknown } }, etag: string) => {
  expect(r.status, r.text).toBe(412);
  expect(r.body.code).toBe("precondition_failed");
  expect(r.headers.get("content-type")).toMatch(/^application\/problem\+json/);
  expect(r.headers.get("etag")).toBe(etag);
};

describe("a task's version and ETag", () => {
  it("when a task changes, then its version counts every change it shows (content, archive, unarchive; not a PATCH that changes nothing) and each answer's ETag is that version", async () => {
    const t = await f.tenant();
    const task = await newTask(t);
    expect(task.version).toBe(1);
    const steps: Array<[string, () => Promise<{ status: number; headers: Headers; body: Record<string, unknown> }>, number]> = [
      ["PATCH", () => gw.patch(`/v1/tasks/${task.id}`, { title: "Versioned, renamed" }, auth(t)), 2],
      ["PATCH without a change", () => gw.patch(`/v1/tasks/${task.id}`, { title: "Versioned, renamed" }, auth(t)), 2],
      ["archive", () => gw.post(`/v1/tasks/${task.id}/archive`, undefined, auth(t)), 3],
      ["archive again", () => gw.post(`/v1/tasks/${task.id}/archive`, undefined, auth(t)), 3],
      ["unarchive", () => gw.post(`/v1/tasks/${task.id}/unarchive`, undefined, auth(t)), 4],
      ["PATCH", () => gw.patch(`/v1/tasks/${task.id}`, { status: "IN_PROGRESS" }, auth(t)), 5],
      ["GET", () => gw.get(`/v1/tasks/${task.id}`, auth(t)), 5],
    ];
    for (const [what, step, version] of steps) {
      const r = await step();
      expect(r.status, what).toBe(200);
      expect(r.body["version"], what).toBe(version);
      expect(r.headers.get("etag"), what).toBe(`"${version}"`);
    }
    // History holds the content versions, each with the task's version it was.
    expect(await historyOf(t, task.id)).toEqual([5, 2, 1]);
    const listed = bodyOf(await gw.get("/v1/tasks", auth(t)), page(Task)).data;
    expect(listed[0]?.version).toBe(5);
  });
});

describe("If-None-Match on GET /v1/tasks/{id}", () => {
  it("when it names the current version (strong, weak or *), then 304 with the ETag and no body; another version, 200; a malformed one, 400", async () => {
    const t = await f.tenant();
    const task = await newTask(t);
    for (const tag of ['"1"', 'W/"1"', '"7", "1"', "*"]) {
      const r = await gw.get(`/v1/tasks/${task.id}`, auth(t, { "if-none-match": tag }));
      expect(r.status, tag).toBe(304);
      expect(r.text, tag).toBe("");
      expect(r.headers.get("etag"), tag).toBe('"1"');
    }
    const other = await gw.get(`/v1/tasks/${task.id}`, auth(t, { "if-none-match": '"2"' }));
    expect(other.status).toBe(200);
    expect(other.body.version).toBe(1);
    const bad = await gw.get(`/v1/tasks/${task.id}`, auth(t, { "if-none-match": "1" }));
    expect(bad.status, bad.text).toBe(400);
    expect(pointersOf(bad.body)).toEqual(["/If-None-Match"]);
  });
});

describe("If-Match", () => {
  const writes: Array<
    [
      string,
      (
        t: Tenant,
        id: string,
        blocker: string,
        h: Record<string, string>,
      ) => Promise<{ status: number; text: string; headers: Headers; body: Record<string, unknown> }>,
    ]
  > = [
    ["PATCH", (t, id, _b, h) => gw.patch(`/v1/tasks/${id}`, { title: "Changed under If-Match" }, auth(t, h))],
    ["archive", (t, id, _b, h) => gw.post(`/v1/tasks/${id}/archive`, undefined, auth(t, h))],
    ["unarchive", (t, id, _b, h) => gw.post(`/v1/tasks/${id}/unarchive`, undefined, auth(t, h))],
    ["add a dependency", (t, id, b, h) => gw.post(`/v1/tasks/${id}/dependencies`, { blocker_task_id: b }, auth(t, h))],
    ["remove a dependency", (t, id, b, h) => gw.delete(`/v1/tasks/${id}/dependencies/${b}`, auth(t, h))],
  ];

  for (const [what, write] of writes) {
    it(`when ${what} names a version the task is no longer at, then 412 with the current ETag and nothing changes; with the current one (or *), it goes through`, async () => {
      const t = await f.tenant();
      const task = await newTask(t);
      const blocker = await newTask(t, "Blocker");
      // The state each write starts from: archived before unarchive, linked before the removal.
      if (what === "unarchive") expect((await gw.post(`/v1/tasks/${task.id}/archive`, undefined, auth(t))).status).toBe(200);
      if (what === "remove a dependency")
        expect((await gw.post(`/v1/tasks/${task.id}/dependencies`, { blocker_task_id: blocker.id }, auth(t))).status).toBe(201);
      const current = bodyOf(await gw.get(`/v1/tasks/${task.id}`, auth(t)), Task);
      const etag = `"${current.version}"`;
      const deps = async () => (await gw.get(`/v1/tasks/${task.id}/dependencies`, auth(t))).text;
      const before = { task: JSON.stringify(current), deps: await deps(), events: await eventsOf(t, task.id, "task.updated") };

      for (const stale of [`"${current.version + 1}"`, `W/${etag}`, `"0", "${current.version + 3}"`]) {
        expect412(await write(t, task.id, blocker.id, { "if-match": stale }), etag);
      }
      expect(JSON.stringify((await gw.get(`/v1/tasks/${task.id}`, auth(t))).body)).toBe(before.task);
      expect(await deps()).toBe(before.deps);
      expect(await eventsOf(t, task.id, "task.updated")).toBe(before.events);

      const bad = await write(t, task.id, blocker.id, { "if-match": "no quotes" });
      expect(bad.status, bad.text).toBe(400);
      expect(pointersOf(bad.body)).toEqual(["/If-Match"]);

      const ok = await write(t, task.id, blocker.id, { "if-match": `"0", ${etag}` });
      expect([200, 201], ok.text).toContain(ok.status);
    });
  }

  it("when * is sent, then the write goes through whatever the version", async () => {
    const t = await f.tenant();
    const task = await newTask(t);
    const r = await gw.patch(`/v1/tasks/${task.id}`, { title: "Any version" }, auth(t, { "if-match": "*" }));
    expect(r.status, r.text).toBe(200);
    expect(r.body.version).toBe(2);
  });

  it("when 50 writers PATCH one task at once with the same If-Match through two gateways, then exactly one wins: one 200, 49 × 412, one new version, one event", async () => {
    const t = await f.tenant();
    const task = await newTask(t);
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => (i % 2 === 0 ? gw : gw2).patch(`/v1/tasks/${task.id}`, { title: `Writer ${i}` }, auth(t, { "if-match": '"1"' }))),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 412)).toHaveLength(49);
    for (const r of results.filter((x) => x.status === 412)) expect(r.headers.get("etag")).toBe('"2"');
    const winner = results.find((r) => r.status === 200);
    const now = (await gw.get(`/v1/tasks/${task.id}`, auth(t))).body;
    expect(now.title).toBe(winner?.body.title);
    expect(await historyOf(t, task.id)).toEqual([2, 1]);
    expect(await eventsOf(t, task.id, "task.updated")).toBe(1);
  });

  it("when a 412 was answered under an Idempotency-Key, then a retry with that key replays it (even once the If-Match would match)", async () => {
    const t = await f.tenant();
    const task = await newTask(t);
    const h = { "if-match": '"2"', "idempotency-key": `stale-${task.id}-${Date.now()}` };
    expect412(await gw.patch(`/v1/tasks/${task.id}`, { title: "Too early" }, auth(t, h)), '"1"');
    expect((await gw.patch(`/v1/tasks/${task.id}`, { title: "Meanwhile" }, auth(t))).status).toBe(200);
    const again = await gw.patch(`/v1/tasks/${task.id}`, { title: "Too early" }, auth(t, h));
    expect412(again, '"1"');
    expect(again.headers.get("idempotency-replayed")).toBe("true");
    expect((await gw.get(`/v1/tasks/${task.id}`, auth(t))).body.title).toBe("Meanwhile");
  });
});
