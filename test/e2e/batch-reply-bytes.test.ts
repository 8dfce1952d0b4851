import { e2eContext, type ApiResponse, type Tenant, bodyOf } from "@tasksvc/testing";
import { beforeAll, describe, expect, it } from "vitest";
import { Task, type Page } from "@tasksvc/contracts";

// A batch's results travel from the tasks service in runs, each under NATS's max_payload (1 MiB
// here): a run stops before an item whose answer might not fit, and the gateway sends the rest
// from there. A task's answer can be 600 kB and more (notes of control characters, six bytes
// each in JSON), so two updates of one such task used to make a reply past the limit: the
// items were applied, and the client got a 503 (later a 500) for a batch that could never answer.
const { gw, f } = e2eContext();

/** Notes of 99,000 U+0001: 594,000 bytes in JSON. */
const LONG_NOTES = "\u0001".repeat(99_000);
/** A batch's answer when every item succeeded. */
type Batch = { results: Array<{ status: number; body: Task }> };
const say = (r: ApiResponse) => `${r.status} ${r.text.slice(0, 300)}`;

let t: Tenant;
let big: string;
let mid: string;
beforeAll(async () => {
  t = await f.tenant("team");
  const r = await gw.post("/v1/tasks", { title: "big", notes: LONG_NOTES }, { token: t.apiKey });
  expect(r.status, say(r)).toBe(201);
  big = bodyOf(r, Task).id;
  // Its answer is 252 kB: just under what used to end a run.
  const m = await gw.post("/v1/tasks", { title: "mid", notes: "\u0001".repeat(42_000) }, { token: t.apiKey });
  expect(m.status, say(m)).toBe(201);
  mid = bodyOf(m, Task).id;
});

describe("a batch whose answers together pass max_payload", () => {
  it("when it updates a 600 kB task three times and creates a large task, then every item runs once, in order, and the batch answers 200 with every result", async () => {
    const operations = [
      { method: "update", task_id: big, body: { title: "big, once" } },
      { method: "update", task_id: big, body: { title: "big, twice" } },
      { method: "create", body: { title: "another big", notes: "\u0001".repeat(30_000) } },
      { method: "update", task_id: big, body: { priority: "HIGH" } },
    ];
    const r = await gw.post<Batch>("/v1/tasks/batch", { operations }, { token: t.apiKey, headers: { "Idempotency-Key": `bytes-${t.organizationId}` } });
    expect(r.status, say(r)).toBe(200);
    const results = r.body.results;
    expect(results.map((x) => x.status)).toEqual([200, 200, 201, 200]);
    expect(results.map((x) => x.body.title)).toEqual(["big, once", "big, twice", "another big", "big, twice"]);
    expect(results.map((x) => x.body.version)).toEqual([2, 3, 1, 4]);
    expect(results[0]?.body.notes).toBe(LONG_NOTES);
    const now = await gw.get(`/v1/tasks/${big}`, { token: t.apiKey });
    expect(now.status, say(now)).toBe(200);
    expect({ version: now.body.version, title: now.body.title, priority: now.body.priority }).toEqual({ version: 4, title: "big, twice", priority: "HIGH" });
  }, 60_000);

  it("when an update's answer is followed by creates whose answers together pass it, then the creates run in the next run and the batch answers 200", async () => {
    // 252 kB, then creates of 198 kB and 660 kB (within one run of the gateway's: it cuts runs
    // by request bytes, and the update's request is small): 1.1 MB in one reply before.
    const operations = [
      { method: "update", task_id: mid, body: { title: "mid, updated" } },
      { method: "create", body: { title: "first of two", notes: "\u0001".repeat(33_000) } },
      { method: "create", body: { title: "second of two", notes: "\u0001".repeat(100_000), description: "\u0001".repeat(10_000) } },
    ];
    const r = await gw.post<Batch>("/v1/tasks/batch", { operations }, { token: t.apiKey });
    expect(r.status, say(r)).toBe(200);
    const results = r.body.results;
    expect(results.map((x) => [x.status, x.body.title])).toEqual([
      [200, "mid, updated"],
      [201, "first of two"],
      [201, "second of two"],
    ]);
    const page = await gw.post<Page<Task>>("/v1/tasks/search", { filter: { field: "title", op: "contains", value: "of two" } }, { token: t.apiKey });
    expect(page.status, say(page)).toBe(200);
    expect(page.body.data.map((x) => x.title).sort()).toEqual(["first of two", "second of two"]);
  }, 60_000);
});
