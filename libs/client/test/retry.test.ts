import { createServer } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { createClient } from "../src/index.js";
import { portOf, must } from "@tasksvc/testing";

// The client's retries against a real HTTP server that answers from a script: it stands in for a
// gateway at the edge of its burst limit or billing-period allowance.

interface Answer {
  status: number;
  /** Headers of the answer; a function is called when the answer is sent (an HTTP-date from then). */
  headers?: Record<string, string> | (() => Record<string, string>);
  body?: unknown;
}

interface Seen {
  method: string;
  path: string;
  key: string | undefined;
  body: string;
  /** performance.now() when the request had arrived. */
  at: number;
}

const servers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((close) => close()));
});

/** A server that answers the n-th request with answers[n] (the last one again after the end). */
async function scripted(answers: Answer[]) {
  const seen: Seen[] = [];
  /** performance.now() when each answer was sent. */
  const sent: number[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const key = req.headers["idempotency-key"];
      seen.push({
        method: req.method ?? "",
        path: req.url ?? "",
        key: typeof key === "string" ? key : undefined,
        body: Buffer.concat(chunks).toString(),
        at: performance.now(),
      });
      const a = must(answers[Math.min(seen.length, answers.length) - 1], "an answer");
      const headers = typeof a.headers === "function" ? a.headers() : (a.headers ?? {});
      res.writeHead(a.status, { "content-type": a.status >= 400 ? "application/problem+json" : "application/json", ...headers });
      sent.push(performance.now());
      res.end(JSON.stringify(a.body ?? {}));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  servers.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  const port = portOf(server);
  return { baseUrl: `http://127.0.0.1:${port}`, seen, sent };
}

const rateLimited = (retryAfter: string | (() => string), detail = "Burst limit exceeded") => ({
  status: 429,
  headers: () => ({ "retry-after": typeof retryAfter === "function" ? retryAfter() : retryAfter }),
  body: { type: "about:blank", title: "Too Many Requests", status: 429, code: "rate_limited", detail },
});
const task = { id: "T-1", title: "Retried", status: "TODO" };

describe("a 429 with Retry-After", () => {
  it("when a POST is answered 429 with Retry-After: 1, then the client waits at least a second and sends it again with the same Idempotency-Key and body", async () => {
    const server = await scripted([rateLimited("1"), { status: 201, body: task }]);
    const api = createClient({ baseUrl: server.baseUrl, token: "svc_test" });
    const r = await api.POST("/v1/tasks", { body: { title: "Retried" } });
    expect(r.response.status).toBe(201);
    expect(r.data?.id).toBe("T-1");
    expect(server.seen).toHaveLength(2);
    const [first, second] = server.seen as [Seen, Seen];
    expect(first.key).toMatch(/^[0-9a-f-]{36}$/);
    expect(second.key).toBe(first.key);
    expect(second.body).toBe(first.body);
    expect(second.at - must(server.sent[0], "the first answer's time")).toBeGreaterThanOrEqual(1000);
  });

  it("when a 429's Retry-After is an HTTP-date, then the client waits until that date before the next try", async () => {
    // A whole second two to three seconds ahead (an HTTP-date has no milliseconds).
    const twoToThreeSecondsAhead = () => new Date((Math.floor(Date.now() / 1000) + 3) * 1000).toUTCString();
    const server = await scripted([rateLimited(twoToThreeSecondsAhead), { status: 200, body: task }]);
    const api = createClient({ baseUrl: server.baseUrl, token: "svc_test" });
    const r = await api.GET("/v1/tasks/{task_id}", { params: { path: { task_id: "T-1" } } });
    expect(r.response.status).toBe(200);
    expect(server.seen.map((s) => s.method)).toEqual(["GET", "GET"]);
    expect(must(server.seen[1], "the second request").at - must(server.sent[0], "the first answer's time")).toBeGreaterThanOrEqual(2000);
  });

  it("when a 429 asks for longer than maxRetryAfterMs, or says no Retry-After, then it comes back at once", async () => {
    // An exhausted allowance renews at the end of the billing period: days, not worth waiting for.
    const exhausted = await scripted([
      { status: 429, headers: { "retry-after": "2592000" }, body: { status: 429, code: "quota_exhausted", detail: "used up" } },
      { status: 200, body: task },
    ]);
    const r = await createClient({ baseUrl: exhausted.baseUrl, token: "svc_test" }).GET("/v1/tasks/{task_id}", {
      params: { path: { task_id: "T-1" } },
    });
    expect(r.response.status).toBe(429);
    expect(r.error?.code).toBe("quota_exhausted");
    expect(exhausted.seen).toHaveLength(1);

    const bounded = await scripted([rateLimited("1"), { status: 201, body: task }]);
    const strict = createClient({ baseUrl: bounded.baseUrl, token: "svc_test", maxRetryAfterMs: 500 });
    const b = await strict.POST("/v1/tasks", { body: { title: "Retried" } });
    expect(b.response.status).toBe(429);
    expect(b.error?.code).toBe("rate_limited");
    expect(bounded.seen).toHaveLength(1);

    const unsaid = await scripted([
      { status: 429, body: { status: 429, code: "rate_limited" } },
      { status: 201, body: task },
    ]);
    const u = await createClient({ baseUrl: unsaid.baseUrl, token: "svc_test" }).POST("/v1/tasks", { body: { title: "Retried" } });
    expect(u.response.status).toBe(429);
    expect(unsaid.seen).toHaveLength(1);
  });

  it("when every try is answered 429 (or 503), then `retries` bounds the tries together and the last answer comes back", async () => {
    const server = await scripted([
      rateLimited("0", "first"),
      { status: 503, body: { status: 503, code: "service_unavailable" } },
      rateLimited("0", "third"),
      { status: 201, body: task },
    ]);
    const api = createClient({ baseUrl: server.baseUrl, token: "svc_test", retries: 2, maxDelayMs: 100 });
    const r = await api.DELETE("/v1/tasks/{task_id}/dependencies/{blocker_task_id}", { params: { path: { task_id: "T-2", blocker_task_id: "T-1" } } });
    expect(r.response.status).toBe(429);
    expect(r.error?.detail).toBe("third");
    expect(server.seen.map((s) => s.method)).toEqual(["DELETE", "DELETE", "DELETE"]);

    // retries: 0 still turns retries off, and the last answer's Retry-After is not waited out.
    const once = await scripted([
      { status: 503, headers: { "retry-after": "30" }, body: { status: 503, code: "service_unavailable" } },
      { status: 201, body: task },
    ]);
    const off = createClient({ baseUrl: once.baseUrl, token: "svc_test", retries: 0, maxDelayMs: 60_000 });
    expect((await off.POST("/v1/tasks", { body: { title: "Once" } })).response.status).toBe(503);
    expect(once.seen).toHaveLength(1);
  });

  it("when the request is aborted while the client waits out a 429, then it stops waiting and rejects with the abort", async () => {
    const server = await scripted([rateLimited("30"), { status: 200, body: task }]);
    const controller = new AbortController();
    const fetcher = (async (input: string | URL | Request, init?: RequestInit) => {
      const res = await fetch(input, init);
      // The 429 is in hand: the client is about to wait 30 s, longer than this test may take.
      setTimeout(() => controller.abort(), 0);
      return res;
    }) as typeof fetch;
    const api = createClient({ baseUrl: server.baseUrl, token: "svc_test", fetch: fetcher });
    await expect(api.GET("/v1/tasks/{task_id}", { params: { path: { task_id: "T-1" } }, signal: controller.signal })).rejects.toMatchObject({
      name: "AbortError",
    });
    expect(server.seen).toHaveLength(1);
  });
});

describe("a 5xx with Retry-After", () => {
  it("when a 503's Retry-After is an HTTP-date, then the client waits for it, up to maxDelayMs", async () => {
    const later = () => new Date((Math.floor(Date.now() / 1000) + 10) * 1000).toUTCString();
    const server = await scripted([
      { status: 503, headers: () => ({ "retry-after": later() }), body: { status: 503, code: "service_unavailable" } },
      { status: 200, body: task },
    ]);
    const api = createClient({ baseUrl: server.baseUrl, token: "svc_test", maxDelayMs: 1000 });
    const r = await api.GET("/v1/tasks/{task_id}", { params: { path: { task_id: "T-1" } } });
    expect(r.response.status).toBe(200);
    expect(server.seen).toHaveLength(2);
    expect(must(server.seen[1], "the second request").at - must(server.sent[0], "the first answer's time")).toBeGreaterThanOrEqual(1000);
  });
});

describe("which failures are tried again", () => {
  const unavailable = { status: 503, body: { status: 503, code: "service_unavailable" } };

  it("when a write that takes no Idempotency-Key (a test event) is answered 503, then it comes back at once, sent once and with no key, since a second try could act twice", async () => {
    const server = await scripted([unavailable, { status: 200, body: { outcome: "delivered", duration_ms: 1 } }]);
    const api = createClient({ baseUrl: server.baseUrl, token: "svc_test", maxDelayMs: 10 });
    const r = await api.POST("/v1/webhook-endpoints/{endpoint_id}/test-event", { params: { path: { endpoint_id: "whe_1" } }, body: {} });
    expect(r.response.status).toBe(503);
    expect(server.seen).toHaveLength(1);
    expect(must(server.seen[0], "the first request").key).toBeUndefined();
  });

  it("when such a write meets a network error, then the error comes back without a second try", async () => {
    let calls = 0;
    const failing = (async () => {
      calls++;
      throw new TypeError("fetch failed");
    }) as typeof fetch;
    const api = createClient({ baseUrl: "http://127.0.0.1:9", token: "svc_test", fetch: failing, maxDelayMs: 10 });
    await expect(
      api.POST("/v1/webhook-endpoints/{endpoint_id}/deliveries/{delivery_id}/replay", { params: { path: { endpoint_id: "whe_1", delivery_id: "whd_1" } } }),
    ).rejects.toThrow(/fetch failed/);
    expect(calls).toBe(1);
  });

  it("when a PATCH of a task (it takes an Idempotency-Key) is answered 503, then it is sent again with the same key and body", async () => {
    const server = await scripted([unavailable, { status: 200, body: task }]);
    const api = createClient({ baseUrl: server.baseUrl, token: "svc_test", maxDelayMs: 10 });
    const r = await api.PATCH("/v1/tasks/{task_id}", { params: { path: { task_id: "T-1" } }, body: { status: "COMPLETED" } });
    expect(r.response.status).toBe(200);
    expect(server.seen.map((s) => s.method)).toEqual(["PATCH", "PATCH"]);
    const [first, second] = server.seen as [Seen, Seen];
    expect(first.key).toMatch(/^[0-9a-f-]{36}$/);
    expect(second.key).toBe(first.key);
    expect(second.body).toBe(first.body);
  });

  it("when a write that takes no key is answered 429 with a short Retry-After, then it is sent again (nothing ran)", async () => {
    const server = await scripted([rateLimited("0"), { status: 200, body: { outcome: "delivered", duration_ms: 1 } }]);
    const api = createClient({ baseUrl: server.baseUrl, token: "svc_test" });
    const r = await api.POST("/v1/webhook-endpoints/{endpoint_id}/test-event", { params: { path: { endpoint_id: "whe_1" } }, body: {} });
    expect(r.response.status).toBe(200);
    expect(server.seen).toHaveLength(2);
  });
});
