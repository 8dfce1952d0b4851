import { parseConfig } from "@tasksvc/config";
import { api, eventually, factories, loadService, startStack, type StartedStack, problemOf } from "@tasksvc/testing";
import { createLogger } from "@tasksvc/logger";
import { startService } from "@tasksvc/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// Issue 13: every process's /metrics, /healthz and /readyz. This file runs its own stack: the
// boards service is left out at first, so the gateway's readiness can be seen to depend on it.
let stack: StartedStack;
let f: ReturnType<typeof factories>;

beforeAll(async () => {
  stack = await startStack({ replicas: { boards: 0, gateway: 1, keys: 1, tasks: 1, webhooks: 1 } });
  f = factories(stack);
});
afterAll(async () => {
  await f?.close();
  await stack?.stop();
});

const text = async (url: string) => {
  const r = await fetch(url);
  return { status: r.status, type: r.headers.get("content-type") ?? "", body: await r.text() };
};
const json = async (url: string) => {
  const r = await fetch(url);
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
};

/** The value of one series in Prometheus text, e.g. `tasksvc_nats_connected` or `x{a="b"}`; undefined when absent. */
function sample(metrics: string, series: string): number | undefined {
  for (const line of metrics.split("\n")) {
    if (line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    if (line.slice(0, at) === series) return Number(line.slice(at + 1));
  }
  return undefined;
}

/** The series of a family whose labels include all of `labels`. */
function series(metrics: string, family: string, labels: Record<string, string> = {}): Array<{ line: string; value: number }> {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  return metrics
    .split("\n")
    .filter((l) => l.startsWith(`${family}{`) || l.startsWith(`${family} `))
    .filter((l) => want.every((w) => l.includes(w)))
    .map((line) => ({ line, value: Number(line.slice(line.lastIndexOf(" ") + 1)) }));
}

const opsUrl = (service: keyof StartedStack["opsUrls"]) => {
  const url = stack.opsUrls[service]?.[0];
  if (!url) throw new Error(`no ops port for ${service}`);
  return url;
};

describe("metrics", () => {
  it("when requests went through, then the gateway's /metrics shows them by route and status, with RPC latency by operation, and no ids in any label", async () => {
    const t = await f.tenant();
    const client = api(stack.gatewayUrls[0] ?? "");
    const created = await client.post("/v1/tasks", { title: "watched" }, { token: t.apiKey });
    expect(created.status).toBe(201);
    expect((await client.get(`/v1/tasks/${created.body.id}`, { token: t.apiKey })).status).toBe(200);
    expect((await client.get("/v1/tasks/T-999999", { token: t.apiKey })).status).toBe(404);

    const m = await text(`${opsUrl("gateway")}/metrics`);
    expect(m.status).toBe(200);
    expect(m.type).toContain("text/plain");
    const posted = series(m.body, "tasksvc_http_request_duration_seconds_count", { method: "POST", route: "/v1/tasks", status_code: "201" });
    expect(posted[0]?.value).toBeGreaterThanOrEqual(1);
    expect(series(m.body, "tasksvc_http_request_duration_seconds_count", { route: "/v1/tasks/:task_id", status_code: "404" })[0]?.value).toBeGreaterThanOrEqual(
      1,
    );
    expect(
      series(m.body, "tasksvc_rpc_client_duration_seconds_count", { service: "tasks", operation: "createTask", code: "ok" })[0]?.value,
    ).toBeGreaterThanOrEqual(1);
    expect(
      series(m.body, "tasksvc_rpc_client_duration_seconds_count", { service: "tasks", operation: "getTask", code: "resource_not_found" })[0]?.value,
    ).toBeGreaterThanOrEqual(1);
    // Every request is counted out again once its connection says so (the scrape itself is on
    // the ops port, not counted).
    await eventually(async () => expect(sample((await text(`${opsUrl("gateway")}/metrics`)).body, "tasksvc_http_requests_in_flight")).toBe(0), {
      what: "no request in flight",
    });
    expect(series(m.body, "nodejs_eventloop_lag_p99_seconds").length).toBe(1);
    // Bounded labels: nothing that looks like an id (T-123, org_…, key ids) in any series.
    for (const line of m.body.split("\n").filter((l) => !l.startsWith("#"))) expect(line).not.toMatch(/T-\d|"[a-z]{2,4}_[A-Za-z0-9]{8,}"/);
  });

  it("when a write is retried with its Idempotency-Key, then the gateway counts the first execution and the replay", async () => {
    const t = await f.tenant();
    const client = api(stack.gatewayUrls[0] ?? "");
    const read = async () => (await text(`${opsUrl("gateway")}/metrics`)).body;
    const count = (m: string, outcome: string) => series(m, "tasksvc_idempotency_keys_total", { outcome })[0]?.value ?? 0;
    const before = await read();
    const key = `obs-${Date.now()}`;
    const headers = { "idempotency-key": key };
    expect((await client.post("/v1/tasks", { title: "once" }, { token: t.apiKey, headers })).status).toBe(201);
    expect((await client.post("/v1/tasks", { title: "once" }, { token: t.apiKey, headers })).status).toBe(201);
    expect((await client.post("/v1/tasks", { title: "other" }, { token: t.apiKey, headers })).status).toBe(422);
    const after = await read();
    expect(count(after, "first") - count(before, "first")).toBe(1);
    expect(count(after, "replayed") - count(before, "replayed")).toBe(1);
    expect(count(after, "conflict") - count(before, "conflict")).toBe(1);
  });

  it("when a task was written, then the tasks service's ops port shows the RPC it served, its transactions, the outbox relay and its Postgres and NATS state", async () => {
    const t = await f.tenant();
    const client = api(stack.gatewayUrls[0] ?? "");
    expect((await client.post("/v1/tasks", { title: "relayed" }, { token: t.apiKey })).status).toBe(201);
    const url = opsUrl("tasks");
    // The relay publishes right after the commit; the counter follows.
    const m = await eventually(
      async () => {
        const body = (await text(`${url}/metrics`)).body;
        expect(series(body, "tasksvc_outbox_published_total", { outbox: "outbox" })[0]?.value ?? 0).toBeGreaterThanOrEqual(1);
        return body;
      },
      { intervalMs: 100, what: "the relay's published counter" },
    );
    expect(series(m, "tasksvc_rpc_server_duration_seconds_count", { service: "tasks", operation: "createTask", code: "ok" })[0]?.value).toBeGreaterThanOrEqual(
      1,
    );
    expect(series(m, "tasksvc_outbox_published_total", { outbox: "outbox" })[0]?.value).toBeGreaterThanOrEqual(1);
    expect(series(m, "tasksvc_outbox_relay_delay_seconds_count", { outbox: "outbox" })[0]?.value).toBeGreaterThanOrEqual(1);
    expect(series(m, "tasksvc_outbox_backlog_rows", { outbox: "outbox" }).length).toBe(1);
    expect(series(m, "tasksvc_outbox_oldest_row_age_seconds", { outbox: "outbox" }).length).toBe(1);
    expect(series(m, "tasksvc_db_transaction_duration_seconds_count", { outcome: "commit" })[0]?.value).toBeGreaterThanOrEqual(1);
    expect(series(m, "tasksvc_db_transaction_slots", { state: "max" })[0]?.value).toBeGreaterThanOrEqual(1);
    // Its own pool's connections, seen by Postgres.
    expect(series(m, "tasksvc_db_connections").reduce((n, s) => n + s.value, 0)).toBeGreaterThanOrEqual(1);
    expect(sample(m, "tasksvc_nats_connected")).toBe(1);
    expect(series(m, "process_cpu_seconds_total").length).toBe(1);
  });

  it("when task events were fanned out, then the webhooks service's ops port shows its consumer's messages and the server's pending count", async () => {
    const t = await f.tenant();
    const client = api(stack.gatewayUrls[0] ?? "");
    expect((await client.post("/v1/tasks", { title: "an event" }, { token: t.apiKey })).status).toBe(201);
    const url = opsUrl("webhooks");
    const m = await eventually(
      async () => {
        const body = (await text(`${url}/metrics`)).body;
        expect(series(body, "tasksvc_jetstream_messages_total", { outcome: "ack" }).some((s) => s.value >= 1)).toBe(true);
        return body;
      },
      { intervalMs: 100, what: "an acknowledged message on the webhooks service" },
    );
    const consumer = `${stack.namespace}_webhooks_fanout`;
    expect(series(m, "tasksvc_jetstream_messages_total", { consumer, outcome: "ack" })[0]?.value).toBeGreaterThanOrEqual(1);
    expect(series(m, "tasksvc_jetstream_consumer_pending_messages", { consumer }).length).toBe(1);
    expect(series(m, "tasksvc_jetstream_consumer_ack_pending_messages", { consumer }).length).toBe(1);
    expect(series(m, "tasksvc_webhook_deliveries_live", { state: "pending_due" }).length).toBe(1);
  });
});

describe("health", () => {
  it("when a service is up, then /healthz is live and /readyz lists Postgres, NATS and its consumers, all ok", async () => {
    expect((await json(`${opsUrl("tasks")}/healthz`)).status).toBe(200);
    const ready = await json(`${opsUrl("webhooks")}/readyz`);
    expect(ready.status).toBe(200);
    expect(ready.body).toMatchObject({ status: "ready", checks: { postgres: "ok", nats: "ok", [`consumer:${stack.namespace}_webhooks_fanout`]: "ok" } });
    const delivery = await json(`${opsUrl("delivery")}/readyz`);
    expect(delivery.body).toMatchObject({ status: "ready", checks: { nats: "ok", [`consumer:${stack.namespace}_delivery`]: "ok" } });
    expect(delivery.body["checks"]).not.toHaveProperty("postgres");
  });

  it("when a service the gateway forwards to has no replica, then the gateway's /readyz answers 503 naming it, and 200 once one starts", async () => {
    const gateway = stack.gatewayUrls[0] ?? "";
    const before = await fetch(`${gateway}/readyz`);
    expect(before.status).toBe(503);
    const problem = await problemOf(before);
    expect(problem.detail).toContain("service:boards unreachable");
    expect(problem.detail).not.toContain("service:tasks");

    const boards = await loadService("boards");
    const env = { DATABASE_URL: stack.databaseUrl, NATS_URL: stack.natsUrl, NATS_NAMESPACE: stack.namespace, OPS_PORT: "0", LOG_LEVEL: "silent" };
    const replica = await startService(boards, parseConfig(boards.config, env), createLogger({ service: "boards", level: "silent" }));
    try {
      // Readiness is answered from a round of checks up to a second old: poll until it is new.
      const after = await eventually(
        async () => {
          const r = await json(`${gateway}/readyz`);
          expect(r.status).toBe(200);
          return r;
        },
        { intervalMs: 100, what: "the gateway's /readyz to see the boards replica" },
      );
      expect(after.body).toMatchObject({
        status: "ready",
        checks: { "service:boards": "ok", "service:tasks": "ok", "service:keys": "ok", "service:webhooks": "ok" },
      });
    } finally {
      await replica.stop();
    }
  });

  it("when a replica is told to stop, then its /readyz fails at once while /healthz stays live, for SHUTDOWN_DELAY, before it drains", async () => {
    const tasks = await loadService("tasks");
    const env = {
      DATABASE_URL: stack.databaseUrl,
      NATS_URL: stack.natsUrl,
      NATS_NAMESPACE: stack.namespace,
      OPS_PORT: "0",
      LOG_LEVEL: "silent",
      SHUTDOWN_DELAY: "1500ms",
    };
    const replica = await startService(tasks, parseConfig(tasks.config, env), createLogger({ service: "tasks", level: "silent" }));
    const url = `http://127.0.0.1:${replica.opsPort}`;
    expect((await json(`${url}/readyz`)).status).toBe(200);
    const started = performance.now();
    const stopped = replica.stop();
    const during = await json(`${url}/readyz`);
    expect(during.status).toBe(503);
    expect(during.body).toMatchObject({ status: "not_ready", checks: { process: "stopping" } });
    expect((await json(`${url}/healthz`)).status).toBe(200);
    await stopped;
    // The delay is kept (it is what lets load balancers stop routing here before the drain).
    expect(performance.now() - started).toBeGreaterThanOrEqual(1400);
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
  });
});
