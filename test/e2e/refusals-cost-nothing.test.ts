import { randomUUID } from "node:crypto";
import { awayFromWindowEdge, e2eContext, openSse, type SseStream, type Tenant, bodyOf } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";
import { page, Task } from "@tasksvc/contracts";

// DESIGN.md sections 9 and 20: a batch costs one call per item against the billing period and one
// per item against the burst limit, all or none; a request refused with 429 costs nothing,
// batches included.

const { gw, f, stack } = e2eContext();

const auth = (t: Tenant, headers: Record<string, string> = {}) => ({ token: t.apiKey, headers });
const creates = (n: number, title = "Item") => Array.from({ length: n }, (_x, i) => ({ method: "create", body: { title: `${title} ${i}` } }));
const batch = (t: Tenant, n: number, headers: Record<string, string> = {}) =>
  gw.post<{ results: Array<{ status: number }>; code?: string; detail?: string }>("/v1/tasks/batch", { operations: creates(n) }, auth(t, headers));
const callsUsed = async (t: Tenant) => Number((await gw.get("/v1/usage", auth(t))).body.calls_used);
const taskCount = async (t: Tenant) => bodyOf(await gw.get("/v1/tasks?limit=100", auth(t)), page(Task)).data.length;

describe("what a batch costs", () => {
  it("when a batch has more items than the burst window has left, then it is refused whole with 429 rate_limited and costs nothing", async () => {
    const t = await f.tenant();
    await f.admin("setLimits", { org: t.organizationId, burst: 3 });
    await awayFromWindowEdge();
    const refused = await batch(t, 4, { "idempotency-key": randomUUID() });
    expect(refused.status, refused.text).toBe(429);
    expect(refused.body.code).toBe("rate_limited");
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);

    // Its burst call was given back: a batch of 3 takes the whole window, and then nothing passes.
    const three = await batch(t, 3);
    expect(three.status, three.text).toBe(200);
    expect(three.body.results.map((r) => r.status)).toEqual([201, 201, 201]);
    const next = await gw.get("/v1/tasks/T-1", auth(t));
    expect(next.status, next.text).toBe(429);
    expect(next.body.code).toBe("rate_limited");
  });

  it("when a burst of 3 sends batches of 100, then none is applied: the burst counts items, not requests", async () => {
    const t = await f.tenant();
    await f.admin("setLimits", { org: t.organizationId, burst: 3 });
    await awayFromWindowEdge();
    for (let i = 0; i < 3; i++) {
      const r = await batch(t, 100);
      expect(r.status, r.text).toBe(429);
      expect(r.body.detail).toMatch(/at most 3 items per batch/);
    }
    await f.admin("setLimits", { org: t.organizationId, burst: 100_000 });
    expect(await taskCount(t)).toBe(0);
  });

  it("when the billing period cannot cover a batch, then 429 quota_exhausted costs nothing: a batch of exactly what is left then passes, and the next call is refused", async () => {
    const t = await f.tenant();
    const used = await callsUsed(t);
    // `used` counts the read itself: 10 calls are left.
    await f.admin("setLimits", { org: t.organizationId, quota: used + 10 });
    const refused = await batch(t, 11);
    expect(refused.status, refused.text).toBe(429);
    expect(refused.body.code).toBe("quota_exhausted");
    const again = await batch(t, 11, { "idempotency-key": randomUUID() });
    expect(again.status, again.text).toBe(429);

    const fits = await batch(t, 10);
    expect(fits.status, fits.text).toBe(200);
    expect(fits.body.results.every((r) => r.status === 201)).toBe(true);
    const next = await gw.get("/v1/usage", auth(t));
    expect(next.status, next.text).toBe(429);
    expect(next.body.code).toBe("quota_exhausted");
  });
});

describe("any request refused with 429", () => {
  it("when a credential's 6th stream is refused with 429, then it costs no call", async () => {
    const t = await f.tenant();
    const url = `${stack.gatewayUrls[0]}/v1/events/stream`;
    const open: SseStream[] = [];
    try {
      for (let i = 0; i < 5; i++) open.push(await openSse(url, { token: t.apiKey }));
      expect(open.map((s) => s.status)).toEqual([200, 200, 200, 200, 200]);
      const before = await callsUsed(t);
      for (let i = 0; i < 3; i++) expect((await openSse(url, { token: t.apiKey })).status).toBe(429);
      // Only the usage read itself was counted.
      expect(await callsUsed(t)).toBe(before + 1);
    } finally {
      for (const s of open) s.close();
    }
  });
});

describe("a path that names no route", () => {
  it("when a path's id is empty (GET /v1/tasks/, PATCH /v1/projects/), with a valid key, then 404 route_not_found like any unknown path, and it costs no call", async () => {
    const t = await f.tenant();
    const before = await callsUsed(t);
    for (const [method, path] of [
      ["GET", "/v1/tasks/"],
      ["PATCH", "/v1/projects/"],
      ["GET", "/v1/tasks//history"],
    ] as const) {
      const r = await gw.request(method, path, { token: t.apiKey, ...(method === "PATCH" ? { body: { name: "x" } } : {}) });
      expect(r.status, `${method} ${path}: ${r.text}`).toBe(404);
      expect(r.body.code).toBe("route_not_found");
      expect(r.headers.get("x-ratelimit-remaining")).toBeNull();
    }
    // Only the usage read itself was counted.
    expect(await callsUsed(t)).toBe(before + 1);
  });
});
