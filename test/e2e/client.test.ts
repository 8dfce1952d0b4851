import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createClient, TasksvcError, unwrap } from "@tasksvc/client";
import { e2eContext } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";

// Issue 14: the typed client (@tasksvc/client) against the running stack: a script creates a
// task, pages through tasks, and survives a retried create without a twin.
const { stack, f, db } = e2eContext();
const baseUrl = stack.gatewayUrls[0] as string;

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

  it("when an answer is a problem, then unwrap throws a TasksvcError with its status, code and request id", async () => {
    const t = await f.tenant();
    const api = createClient({ baseUrl, token: t.apiKey });
    const r = await api.GET("/v1/tasks/{task_id}", { params: { path: { task_id: "T-999999" } } });
    expect(r.error?.code).toBe("resource_not_found");
    let thrown: unknown;
    try {
      unwrap(r);
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(TasksvcError);
    expect(thrown).toMatchObject({ status: 404, code: "resource_not_found" });
    expect((thrown as TasksvcError).requestId).toMatch(/^req_/);
  });

  it("when the types are generated again from docs/openapi.json, then they match the committed libs/client/src/schema.ts", () => {
    const root = fileURLToPath(new URL("../..", import.meta.url));
    const dir = mkdtempSync(join(tmpdir(), "tasksvc-client-"));
    try {
      const out = join(dir, "schema.ts");
      execFileSync(process.execPath, [join(root, "node_modules/openapi-typescript/bin/cli.js"), join(root, "docs/openapi.json"), "-o", out], {
        stdio: "ignore",
      });
      expect(readFileSync(out, "utf8"), "libs/client/src/schema.ts is stale: run `npm run generate -w libs/client`").toBe(
        readFileSync(join(root, "libs/client/src/schema.ts"), "utf8"),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
