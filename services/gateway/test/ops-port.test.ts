import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { parseConfig } from "@tasksvc/config";
import { createLogger } from "@tasksvc/logger";
import { startService } from "@tasksvc/runtime";
import { api, factories, problemOf } from "@tasksvc/testing";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { GatewayConfig } from "../src/config.js";
import { service as gatewayService } from "../src/service.js";

// One more gateway replica on the run's stack, started as a deployment starts it: its settings
// from the environment (CORS_ORIGINS among them), its ops port from OPS_PORT.
const stack = inject("stack");
const APP = "https://app.example.test";
const f = factories(stack);
let stop: () => Promise<void> = async () => {};
let publicUrl = "";
let opsUrl = "";

beforeAll(async () => {
  const env = {
    DATABASE_URL: stack.databaseUrl,
    NATS_URL: stack.natsUrl,
    NATS_NAMESPACE: stack.namespace,
    PORT: "0",
    OPS_PORT: "0",
    CORS_ORIGINS: `${APP}, http://localhost:5173`,
  };
  const gateway = await startService(gatewayService, parseConfig(GatewayConfig, env), createLogger({ service: "gateway", level: "silent" }));
  stop = () => gateway.stop();
  publicUrl = gateway.url;
  opsUrl = `http://127.0.0.1:${gateway.opsPort}`;
});
afterAll(async () => {
  await stop();
  await f.close();
});

describe("where the gateway's metrics are", () => {
  it("when GET /metrics is sent to the public port, then 404 route_not_found as problem+json; its ops port serves the Prometheus text", async () => {
    const t = await f.tenant();
    expect((await api(publicUrl).get("/v1/tasks", { token: t.apiKey })).status).toBe(200);

    const pub = await fetch(`${publicUrl}/metrics`);
    expect(pub.status).toBe(404);
    expect(pub.headers.get("content-type")).toContain("application/problem+json");
    expect((await problemOf(pub)).code).toBe("route_not_found");

    const ops = await fetch(`${opsUrl}/metrics`);
    expect(ops.status).toBe(200);
    expect(ops.headers.get("content-type")).toContain("text/plain");
    expect(await ops.text()).toMatch(/^tasksvc_http_request_duration_seconds_count\{method="GET",route="\/v1\/tasks",status_code="200"\} [1-9]/m);
  });

  it("when probes ask, then /healthz and /readyz answer on the public port and on the ops port", async () => {
    for (const base of [publicUrl, opsUrl]) {
      expect((await fetch(`${base}/healthz`)).status, base).toBe(200);
      expect((await fetch(`${base}/readyz`)).status, base).toBe(200);
    }
  });
});

describe("CORS_ORIGINS from the environment", () => {
  it("when a listed origin sends a preflight and then the request, then the preflight is 204 uncharged and the answer exposes the rate-limit headers it carries", async () => {
    const t = await f.tenant();
    const gw = api(publicUrl);
    const pre = await fetch(`${publicUrl}/v1/tasks`, {
      method: "OPTIONS",
      headers: { origin: APP, "access-control-request-method": "POST", "access-control-request-headers": "authorization,content-type,idempotency-key" },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get("access-control-allow-origin")).toBe(APP);
    expect(pre.headers.get("access-control-allow-methods")).toContain("POST");
    expect(pre.headers.get("ratelimit")).toBeNull();

    const r = await gw.post("/v1/tasks", { title: "from a page" }, { token: t.apiKey, headers: { origin: APP, "idempotency-key": `cors-${Date.now()}` } });
    expect(r.status, r.text).toBe(201);
    expect(r.headers.get("access-control-allow-origin")).toBe(APP);
    const exposed = (r.headers.get("access-control-expose-headers") ?? "").toLowerCase();
    for (const h of ["ratelimit", "x-request-id", "x-ratelimit-remaining"]) {
      expect(r.headers.get(h), h).not.toBeNull();
      expect(exposed).toContain(h);
    }
  });

  it("when an unlisted origin asks, then no Access-Control-Allow-Origin", async () => {
    const r = await fetch(`${publicUrl}/healthz`, { headers: { origin: "https://other.example.test" } });
    expect(r.status).toBe(200);
    expect(r.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("when CORS_ORIGINS is not a list of origins, then the gateway does not start and names the setting", async () => {
    const entry = fileURLToPath(new URL("../dist/main.js", import.meta.url));
    const child = spawn(process.execPath, [entry], {
      env: { PATH: process.env["PATH"] ?? "", LOG_LEVEL: "silent", NATS_URL: stack.natsUrl, CORS_ORIGINS: "https://app.example.test/" },
    });
    let stderr = "";
    child.stderr.on("data", (d) => (stderr += d));
    const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
    expect(code).toBe(1);
    expect(stderr).toContain('CORS_ORIGINS: expected `*` or a comma-separated list of origins (write "https://app.example.test/" as https://app.example.test');
  });
});
