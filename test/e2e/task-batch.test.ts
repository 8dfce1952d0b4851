import { randomUUID } from "node:crypto";
import { CreatedApiKey, Event, page, Task, TaskVersion } from "@tasksvc/contracts";
import { awayFromWindowEdge, e2eContext, eventually, type Tenant, bodyOf, pointersOf, type ApiResponse } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";

// POST /v1/tasks/batch: each item answers, applies, emits and records history exactly as its
// single operation; items run in order and a failing one stops none; one Idempotency-Key covers
// the batch (a replay answers the same results, is not charged and applies nothing again, also
// when the gateway lost its record); one call per item against the billing period and one per
// item against the burst limit, all or none.

const { gw, f, db } = e2eContext();

const auth = (t: Tenant, headers: Record<string, string> = {}) => ({ token: t.apiKey, headers });
type Op = Record<string, unknown>;
interface Result {
  status: number;
  etag?: string;
  body: Record<string, unknown>;
}
const batch = (t: Tenant, operations: Op[], headers: Record<string, string> = {}) =>
  gw.post<{ results: Result[]; code?: string; detail?: string }>("/v1/tasks/batch", { operations }, auth(t, headers));

async function newTasks(t: Tenant, n: number): Promise<void> {
  for (let i = 1; i <= n; i++) expect((await gw.post("/v1/tasks", { title: `Task ${i}` }, auth(t))).status).toBe(201);
}

/** Every event of one type in the organization's feed (all pages). */
async function eventCount(t: Tenant, type: string): Promise<number> {
  let n = 0;
  let after: string | null = null;
  do {
    const r: ApiResponse = await gw.get(`/v1/events?type=${type}&limit=100${after ? `&after=${encodeURIComponent(after)}` : ""}`, auth(t));
    expect(r.status, r.text).toBe(200);
    const feed = bodyOf(r, page(Event));
    n += feed.data.length;
    after = feed.next_cursor;
  } while (after);
  return n;
}
const historyOf = async (t: Tenant, id: string) =>
  bodyOf(await gw.get(`/v1/tasks/${id}/history?limit=100`, auth(t)), page(TaskVersion)).data.map((v) => v.version);
const callsUsed = async (t: Tenant) => Number((await gw.get("/v1/usage", auth(t))).body.calls_used);

/**
 * 100 items, 3 of which fail: item 10 has a bad body (400), item 51 a stale If-Match (412) and
 * item 52 names an unknown task (404). Item 50 updates the task item 0 created (T-4: the tenant
 * has T-1 … T-3), so it passes only if items run in order. Creates: 49 (T-4 … T-52); updates:
 * 1 + 46 (T-5 … T-50); one archive (T-1).
 */
function hundredItems(): Op[] {
  const ops: Op[] = [];
  for (let i = 0; i < 50; i++) ops.push({ method: "create", body: i === 10 ? { title: "", priority: "SOON" } : { title: `Batch ${i}` } });
  ops.push({ method: "update", task_id: "T-4", body: { status: "IN_PROGRESS" }, if_match: '"1"' });
  ops.push({ method: "update", task_id: "T-4", body: { status: "COMPLETED" }, if_match: '"1"' });
  ops.push({ method: "update", task_id: "T-999", body: { priority: "HIGH" } });
  for (let n = 5; n <= 50; n++) ops.push({ method: "update", task_id: `T-${n}`, body: { priority: "HIGH" } });
  ops.push({ method: "archive", task_id: "T-1" });
  return ops;
}

describe("POST /v1/tasks/batch", () => {
  it("when 100 items include a bad body, a stale If-Match and an unknown task, then the other 97 are applied in order, each answered, evented and versioned as its single operation", async () => {
    const t = await f.tenant();
    await newTasks(t, 3);
    const ops = hundredItems();
    expect(ops).toHaveLength(100);
    const r = await batch(t, ops);
    expect(r.status, r.text).toBe(200);
    const results = r.body.results;
    expect(results).toHaveLength(100);

    // The three failures, at their indexes, with the problem the single operation answers.
    const failed = results.flatMap((x, i) => (x.status >= 400 ? [i] : []));
    expect(failed).toEqual([10, 51, 52]);
    const single400 = await gw.post("/v1/tasks", ops[10]?.["body"], auth(t));
    expect(single400.status).toBe(400);
    expect(results[10]).toEqual({ status: 400, body: single400.body });
    expect(pointersOf(results[10]?.body).sort()).toEqual(["/priority", "/title"]);
    const single404 = await gw.patch("/v1/tasks/T-999", { priority: "HIGH" }, auth(t));
    expect(results[52]).toEqual({ status: 404, body: single404.body });
    expect(results[51]?.status).toBe(412);
    expect(results[51]?.etag).toBe('"2"');
    expect(results[51]?.body).toMatchObject({ code: "precondition_failed", status: 412, type: expect.stringMatching(/\/docs\/errors#precondition_failed$/) });

    // The successes: creates numbered in order, the update of a task created earlier in the batch.
    const creates = results.slice(0, 50).filter((_x, i) => i !== 10);
    expect(creates.map((x) => x.status)).toEqual(Array(49).fill(201));
    expect(creates.map((x) => x.body["id"])).toEqual(Array.from({ length: 49 }, (_x, i) => `T-${i + 4}`));
    expect(results[50]).toMatchObject({ status: 200, etag: '"2"', body: { id: "T-4", version: 2, status: "IN_PROGRESS" } });
    expect(results.slice(53, 99).every((x) => x.status === 200 && x.body["priority"] === "HIGH" && x.body["version"] === 2)).toBe(true);
    expect(results[99]).toMatchObject({ status: 200, body: { id: "T-1", archived: true } });
    expect(await gw.get("/v1/tasks/T-53", auth(t))).toMatchObject({ status: 404 });
    const t4 = bodyOf(await gw.get("/v1/tasks/T-4", auth(t)), Task);
    expect(t4).toMatchObject({ version: 2, status: "IN_PROGRESS" });

    // History as the single operations make it; one event per applied item.
    expect(await historyOf(t, "T-4")).toEqual([2, 1]);
    expect(await historyOf(t, "T-50")).toEqual([2, 1]);
    expect(await historyOf(t, "T-51")).toEqual([1]);
    await eventually(
      async () => {
        expect(await eventCount(t, "task.created")).toBe(3 + 49);
        expect(await eventCount(t, "task.updated")).toBe(1 + 46);
        expect(await eventCount(t, "task.archived")).toBe(1);
      },
      { timeoutMs: 15_000, intervalMs: 200, what: "the batch's 97 events in the feed" },
    );
  });

  it("when a batch is sent again with its Idempotency-Key, then the same results are replayed, not charged, and nothing is applied again", async () => {
    const t = await f.tenant();
    await newTasks(t, 3);
    const key = randomUUID();
    const ops = hundredItems();
    const before = await callsUsed(t);
    const first = await batch(t, ops, { "idempotency-key": key });
    expect(first.status, first.text).toBe(200);
    expect(first.headers.get("idempotency-replayed")).toBeNull();
    // One call per item, and one for the usage read itself.
    expect(await callsUsed(t)).toBe(before + 100 + 1);

    const again = await batch(t, ops, { "idempotency-key": key });
    expect(again.status, again.text).toBe(200);
    expect(again.headers.get("idempotency-replayed")).toBe("true");
    expect(again.text).toBe(first.text);
    expect(await callsUsed(t)).toBe(before + 100 + 1 + 1);
    expect(await gw.get("/v1/tasks/T-53", auth(t))).toMatchObject({ status: 404 });
    expect(await historyOf(t, "T-5")).toEqual([2, 1]);
    await eventually(async () => expect(await eventCount(t, "task.created")).toBe(3 + 49), {
      timeoutMs: 15_000,
      intervalMs: 200,
      what: "the first batch's events",
    });
    expect(await eventCount(t, "task.updated")).toBe(1 + 46);
  });

  it("when the gateway lost its record of the key, then a retry answers each item from the tasks service's records: the same results, nothing applied twice", async () => {
    const t = await f.tenant();
    // Two batches of 100 within a minute: more than the plan's burst counts (one per item).
    await f.admin("setLimits", { org: t.organizationId, burst: 1000 });
    await newTasks(t, 3);
    const key = randomUUID();
    const ops = hundredItems();
    const first = await batch(t, ops, { "idempotency-key": key });
    expect(first.status, first.text).toBe(200);
    await db`delete from gateway.idempotency_keys where key = ${key}`;
    const retry = await batch(t, ops, { "idempotency-key": key });
    expect(retry.status, retry.text).toBe(200);
    // Not a gateway replay: every item ran again and found its own record (or failed as before).
    expect(retry.headers.get("idempotency-replayed")).toBeNull();
    expect(retry.body).toEqual(first.body);
    expect(await gw.get("/v1/tasks/T-53", auth(t))).toMatchObject({ status: 404 });
    expect(await historyOf(t, "T-4")).toEqual([2, 1]);
    expect(await historyOf(t, "T-50")).toEqual([2, 1]);
    await eventually(async () => expect(await eventCount(t, "task.created")).toBe(3 + 49), {
      timeoutMs: 15_000,
      intervalMs: 200,
      what: "the first batch's events",
    });
    expect(await eventCount(t, "task.updated")).toBe(1 + 46);
    expect(await eventCount(t, "task.archived")).toBe(1);
  });

  it("when the answers together exceed a NATS message, then every item still runs once, in order, and is answered", async () => {
    const t = await f.tenant();
    const notes = "n".repeat(100_000);
    expect((await gw.post("/v1/tasks", { title: "Long notes", notes }, auth(t))).status).toBe(201);
    // 12 answers of about 100 kB each: more than the 1 MiB one message holds.
    const r = await batch(
      t,
      Array.from({ length: 12 }, (_x, i) => ({ method: "update", task_id: "T-1", body: { title: `Long notes ${i}` }, if_match: `"${i + 1}"` })),
    );
    expect(r.status, r.text.slice(0, 500)).toBe(200);
    const results = r.body.results;
    expect(results.map((x) => [x.status, x.body["version"], x.body["title"]])).toEqual(Array.from({ length: 12 }, (_x, i) => [200, i + 2, `Long notes ${i}`]));
    expect(results.every((x) => x.body["notes"] === notes)).toBe(true);
  });

  it("when the burst limit is lower than the batch's items, then 429 rate_limited, nothing is applied and nothing counted", async () => {
    const t = await f.tenant();
    await f.admin("setLimits", { org: t.organizationId, burst: 3 });
    await awayFromWindowEdge();
    const r = await batch(
      t,
      Array.from({ length: 20 }, (_x, i) => ({ method: "create", body: { title: `Burst ${i}` } })),
    );
    expect(r.status, r.text).toBe(429);
    expect(r.body.code).toBe("rate_limited");
    expect(r.body.detail).toMatch(/at most 3 items per batch/);
    // The whole burst is still there: 3 single calls pass.
    for (let i = 0; i < 3; i++) expect((await gw.get("/v1/tasks/T-1", auth(t))).status).toBe(404);
  });

  it("when the billing period has fewer calls left than the batch has items, then 429 quota_exhausted and nothing is applied", async () => {
    const t = await f.tenant();
    const used = await callsUsed(t);
    await f.admin("setLimits", { org: t.organizationId, quota: used + 10 });
    const r = await batch(
      t,
      Array.from({ length: 11 }, (_x, i) => ({ method: "create", body: { title: `Quota ${i}` } })),
    );
    expect(r.status, r.text).toBe(429);
    expect(r.body.code).toBe("quota_exhausted");
    expect(Number(r.headers.get("retry-after"))).toBeGreaterThan(60);
    expect(await gw.get("/v1/tasks/T-1", auth(t))).toMatchObject({ status: 404 });
    // The refused batch counted nothing, the read above one: 9 items fit what is left.
    const fits = await batch(
      t,
      Array.from({ length: 9 }, (_x, i) => ({ method: "create", body: { title: `Quota ${i}` } })),
    );
    expect(fits.status, fits.text).toBe(200);
  });

  it("when the key has only tasks:read, then 403 insufficient_scope and nothing is applied", async () => {
    const t = await f.tenant();
    const reader = await gw.post("/v1/api-keys", { name: "reader", scopes: ["tasks:read"] }, auth(t));
    expect(reader.status, reader.text).toBe(201);
    const r = await gw.post("/v1/tasks/batch", { operations: [{ method: "create", body: { title: "No" } }] }, { token: bodyOf(reader, CreatedApiKey).key });
    expect(r.status, r.text).toBe(403);
    expect(r.body.code).toBe("insufficient_scope");
    expect(await gw.get("/v1/tasks/T-1", auth(t))).toMatchObject({ status: 404 });
  });

  it("when the envelope is wrong (no items, 101 items, an unknown method, a missing task_id, a bad if_match), then 400 with a pointer into it and nothing is applied", async () => {
    const t = await f.tenant();
    const create = { method: "create", body: { title: "x" } };
    const cases: Array<[unknown, string]> = [
      [{ operations: [] }, "/operations"],
      [{ operations: Array(101).fill(create) }, "/operations"],
      [{}, "/operations"],
      [{ operations: [create, { method: "delete", task_id: "T-1" }] }, "/operations/1/method"],
      [{ operations: [{ method: "update", body: {} }] }, "/operations/0/task_id"],
      [{ operations: [{ method: "archive", task_id: "T-1", if_match: "3" }] }, "/operations/0/if_match"],
      [{ operations: [{ method: "create", body: "x" }] }, "/operations/0/body"],
      [{ operations: [{ ...create, task_id: "T-1" }] }, "/operations/0/task_id"],
    ];
    for (const [body, pointer] of cases) {
      const r = await gw.post("/v1/tasks/batch", body, auth(t));
      expect(r.status, `${JSON.stringify(body).slice(0, 80)} ${r.text}`).toBe(400);
      expect(r.body.code).toBe("validation_failed");
      expect(pointersOf(r.body), r.text).toContain(pointer);
    }
    expect(await gw.get("/v1/tasks/T-1", auth(t))).toMatchObject({ status: 404 });
  });
});
