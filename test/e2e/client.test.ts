import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createClient, TasksvcError, unwrap } from "@tasksvc/client";
import { awayFromWindowEdge, e2eContext, gatewayUrl, rejectionOf } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";

// The typed client (@tasksvc/client) against the running stack: a script creates a task, pages
// through tasks, survives a retried create without a twin, and waits out a burst limit's 429.
const { stack, f, db } = e2eContext();
const baseUrl = gatewayUrl(stack);

/** A fetch that loses the answer of the first request matching `lose` (it reached the server). */
function losingFetch(lose: (r: Request) => boolean) {
  let lost = 0;
  const seen: Array<{ method: string; key: string | null }> = [];
  const fetcher = async (input: string | URL | Request, init?: RequestInit) => {
    const request = new Request(input, init);
    seen.push({ method: request.method, key: request.headers.get("idempotency-key") });
    const res = await fetch(request);
    if (lost === 0 && lose(request)) {
      lost++;
      await res.arrayBuffer();
      // What undici throws when the socket closes before the answer (the request reached the server).
      throw new TypeError("fetch failed", { cause: new Error("other side closed") });
    }
    return res;
  };
  return { fetch: fetcher as typeof fetch, seen, lost: () => lost };
}

/** A fetch that records each try: its Idempotency-Key, its answer, and when it was sent and answered. */
function recordingFetch() {
  const tries: Array<{ key: string | null; status: number; code: string | undefined; retryAfter: string | null; sentAt: number; answeredAt: number }> = [];
  const fetcher = async (input: string | URL | Request, init?: RequestInit) => {
    const request = new Request(input, init);
    const sentAt = performance.now();
    const res = await fetch(request);
    const answeredAt = performance.now();
    const body = (await res
      .clone()
      .json()
      .catch(() => null)) as { code?: string } | null;
    tries.push({
      key: request.headers.get("idempotency-key"),
      status: res.status,
      code: body?.code,
      retryAfter: res.headers.get("retry-after"),
      sentAt,
      answeredAt,
    });
    return res;
  };
  return { fetch: fetcher as typeof fetch, tries };
}

describe("@tasksvc/client", () => {
  it("when a script creates tasks and pages through them, then every task comes back once, page after page, typed", async () => {
    const t = await f.tenant();
    const api = createClient({ baseUrl, token: t.apiKey });
    const titles = Array.from({ length: 7 }, (_, i) => `Client task ${i}`);
    for (const title of titles) {
      const created = unwrap(await api.POST("/v1/tasks", { body: { title } }));
      expect(created.id).toMatch(/^T-\d+$/);
      expect(created.title).toBe(title);
    }
    const seen: string[] = [];
    // limit 3: three pages for seven tasks.
    for await (const task of api.pages("/v1/tasks", { limit: 3 })) seen.push(task.title);
    expect(seen.sort()).toEqual([...titles].sort());
  });

  it("when the answer to a create is lost and the client retries, then the same Idempotency-Key is sent and there is no twin", async () => {
    const t = await f.tenant();
    const net = losingFetch((r) => r.method === "POST" && new URL(r.url).pathname === "/v1/tasks");
    const api = createClient({ baseUrl, token: t.apiKey, fetch: net.fetch, maxDelayMs: 200 });
    const created = unwrap(await api.POST("/v1/tasks", { body: { title: "Exactly once" } }));
    expect(net.lost()).toBe(1);
    const posts = net.seen.filter((s) => s.method === "POST");
    expect(posts).toHaveLength(2);
    expect(posts[0]?.key).toMatch(/^[0-9a-f-]{36}$/);
    expect(posts[1]?.key).toBe(posts[0]?.key);
    const all = [];
    for await (const task of api.pages("/v1/tasks")) all.push(task);
    expect(all.map((x) => x.title)).toEqual(["Exactly once"]);
    expect(all[0]?.id).toBe(created.id);
    const [row] = await db<{ n: number }[]>`select count(*)::int as n from tasks.tasks where organization_id = ${t.organizationId}`;
    expect(row?.n).toBe(1);
  });

  it("when the server answers 503 or 409 idempotency_in_progress, then the client tries again with the same key; a 4xx is not retried", async () => {
    const t = await f.tenant();
    const answers = [
      new Response(JSON.stringify({ code: "service_unavailable", status: 503 }), { status: 503, headers: { "content-type": "application/problem+json" } }),
      new Response(JSON.stringify({ code: "idempotency_in_progress", status: 409 }), {
        status: 409,
        headers: { "content-type": "application/problem+json", "retry-after": "0" },
      }),
    ];
    const keys: Array<string | null> = [];
    const fetcher = (async (input: string | URL | Request, init?: RequestInit) => {
      const request = new Request(input, init);
      keys.push(request.headers.get("idempotency-key"));
      return answers.shift() ?? fetch(request);
    }) as typeof fetch;
    const api = createClient({ baseUrl, token: t.apiKey, fetch: fetcher, maxDelayMs: 100 });
    const created = unwrap(await api.POST("/v1/projects", { body: { name: "Retried" } }));
    expect(created.name).toBe("Retried");
    expect(keys).toHaveLength(3);
    expect(new Set(keys).size).toBe(1);

    let calls = 0;
    const counting = (async (input: string | URL | Request, init?: RequestInit) => {
      calls++;
      return fetch(new Request(input, init));
    }) as typeof fetch;
    const strict = createClient({ baseUrl, token: t.apiKey, fetch: counting });
    const r = await strict.POST("/v1/projects", { body: { name: "" } });
    expect(r.response.status).toBe(400);
    expect(calls).toBe(1);
  });

  it("when a key's burst limit is used up, then a create waits out the 429's Retry-After and goes through once, with the same Idempotency-Key", async () => {
    const t = await f.tenant("pro");
    await f.admin("setLimits", { org: t.organizationId, burst: 1 });
    // Both calls in one burst window, so the create meets the limit.
    await awayFromWindowEdge();
    const net = recordingFetch();
    const api = createClient({ baseUrl, token: t.apiKey, fetch: net.fetch });
    unwrap(await api.GET("/v1/tasks"));
    const created = unwrap(await api.POST("/v1/tasks", { body: { title: "After the burst" } }));
    expect(created.title).toBe("After the burst");

    const [limited, ...rest] = net.tries.slice(1);
    expect(limited).toMatchObject({ status: 429, code: "rate_limited" });
    const said = Number(limited?.retryAfter) * 1000;
    expect(said).toBeGreaterThan(0);
    expect(said).toBeLessThanOrEqual(60_000);
    expect(rest.at(-1)?.status).toBe(201);
    expect((rest[0]?.sentAt ?? 0) - (limited?.answeredAt ?? 0)).toBeGreaterThanOrEqual(said);
    expect(new Set(net.tries.slice(1).map((x) => x.key)).size).toBe(1);
    const [row] = await db<{ n: number }[]>`select count(*)::int as n from tasks.tasks where organization_id = ${t.organizationId}`;
    expect(row?.n).toBe(1);
  }, 100_000); // The wait is the rest of the current 60-second burst window.

  it("when the organization's allowance is used up, then the 429 quota_exhausted (Retry-After days away) comes back at once", async () => {
    const t = await f.tenant("free");
    await f.admin("setLimits", { org: t.organizationId, quota: 1 });
    const net = recordingFetch();
    const api = createClient({ baseUrl, token: t.apiKey, fetch: net.fetch });
    unwrap(await api.GET("/v1/tasks"));
    const r = await api.GET("/v1/tasks");
    expect(r.response.status).toBe(429);
    expect(r.error?.code).toBe("quota_exhausted");
    expect(net.tries).toHaveLength(2);
    expect(Number(net.tries[1]?.retryAfter)).toBeGreaterThan(60);
  });

  it("when an answer is a problem, then unwrap throws a TasksvcError with its status, code and request id", async () => {
    const t = await f.tenant();
    const api = createClient({ baseUrl, token: t.apiKey });
    const r = await api.GET("/v1/tasks/{task_id}", { params: { path: { task_id: "T-999999" } } });
    expect(r.error?.code).toBe("resource_not_found");
    const thrown = await rejectionOf(() => unwrap(r), TasksvcError);
    expect(thrown).toBeInstanceOf(TasksvcError);
    expect(thrown).toMatchObject({ status: 404, code: "resource_not_found" });
    expect(thrown.requestId).toMatch(/^req_/);
  });

  it("when the types and the list of keyed writes are generated again from docs/openapi.json, and the filter's ops from the API's table, then they match the committed libs/client/src/schema.ts, idempotent.ts and filter-ops.ts", () => {
    const root = fileURLToPath(new URL("../..", import.meta.url));
    const dir = mkdtempSync(join(tmpdir(), "tasksvc-client-"));
    try {
      const out = join(dir, "schema.ts");
      execFileSync(
        process.execPath,
        [join(root, "node_modules/openapi-typescript/bin/cli.js"), join(root, "docs/openapi.json"), "--default-non-nullable", "false", "-o", out],
        {
          stdio: "ignore",
        },
      );
      expect(readFileSync(out, "utf8"), "libs/client/src/schema.ts is stale: run `npm run generate -w libs/client`").toBe(
        readFileSync(join(root, "libs/client/src/schema.ts"), "utf8"),
      );
      const keyed = join(dir, "idempotent.ts");
      execFileSync(process.execPath, [join(root, "libs/client/scripts/idempotent-operations.mjs"), join(root, "docs/openapi.json"), keyed], {
        stdio: "ignore",
      });
      expect(readFileSync(keyed, "utf8"), "libs/client/src/idempotent.ts is stale: run `npm run generate -w libs/client`").toBe(
        readFileSync(join(root, "libs/client/src/idempotent.ts"), "utf8"),
      );
      const ops = join(dir, "filter-ops.ts");
      execFileSync(process.execPath, [join(root, "scripts/gen-client-filters.mjs"), ops], { stdio: "ignore" });
      expect(readFileSync(ops, "utf8"), "libs/client/src/filter-ops.ts is stale: run `npm run -s openapi`").toBe(
        readFileSync(join(root, "libs/client/src/filter-ops.ts"), "utf8"),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    // Two code generators run as processes over the whole document: seconds of CPU, more on busy cores.
  }, 90_000);
});
