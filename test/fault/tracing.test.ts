import { randomBytes } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { api, eventually, factories, startReceiver, type Receiver } from "@tasksvc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startProcessStack, type ProcessStack } from "./processes.js";

/**
 * Issue 13: one trace across every hop. Each service runs as its own process (as in production,
 * each with its own tracer provider and `service.name`), exporting OTLP/HTTP JSON to a collector
 * played by this test. One task created with a caller's `traceparent` must come back as one trace:
 * HTTP → gateway → tasks (RPC) → Postgres (the statement) → outbox relay (publish) → webhooks
 * (JetStream consumer) → delivery (the webhook's HTTP call).
 */
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  service: string;
}

/** A minimal OTLP/HTTP collector: keeps every span of every export, with its resource's service.name. */
async function startCollector() {
  const spans: OtlpSpan[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.url === "/v1/traces") {
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
          resourceSpans?: Array<{
            resource?: { attributes?: Array<{ key: string; value: { stringValue?: string } }> };
            scopeSpans?: Array<{ spans?: Array<Omit<OtlpSpan, "service">> }>;
          }>;
        };
        for (const rs of body.resourceSpans ?? []) {
          const service = rs.resource?.attributes?.find((a) => a.key === "service.name")?.value.stringValue ?? "";
          for (const ss of rs.scopeSpans ?? []) for (const s of ss.spans ?? []) spans.push({ ...s, service });
        }
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, spans, close: () => new Promise<void>((r) => server.close(() => r())) };
}

let collector: Awaited<ReturnType<typeof startCollector>>;
let stack: ProcessStack;
let rx: Receiver;

beforeAll(async () => {
  collector = await startCollector();
  rx = await startReceiver();
  stack = await startProcessStack({
    replicas: { gateway: 1, keys: 1, tasks: 1, boards: 1, webhooks: 1, delivery: 1 },
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, WEBHOOK_ALLOW_HTTP: "true", WEBHOOK_ALLOW_PRIVATE_TARGETS: "true" },
  });
});
afterAll(async () => {
  await stack?.stop();
  await rx?.close();
  await collector?.close();
});

describe("tracing", () => {
  it("when a task is created with a traceparent, then one trace holds the gateway, the tasks RPC, its database statement, the outbox publish, the webhooks consumer and the delivery call", async () => {
    const f = factories(stack);
    const t = await f.tenant();
    await f.close();
    const gw = api(stack.gatewayUrls[0] ?? "");
    const hook = await gw.post("/v1/webhook-endpoints", { url: rx.url("/traced"), event_types: ["task.created"] }, { token: t.apiKey });
    expect(hook.status, hook.text).toBe(201);
    rx.expect("/traced", [hook.body.secret]);

    const traceId = randomBytes(16).toString("hex");
    const parent = randomBytes(8).toString("hex");
    const created = await gw.post("/v1/tasks", { title: "traced" }, { token: t.apiKey, headers: { traceparent: `00-${traceId}-${parent}-01` } });
    expect(created.status, created.text).toBe(201);
    // The gateway answers with its own span in the caller's trace.
    expect(created.headers.get("traceparent")).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    await rx.waitFor("/traced", 1, 20_000);

    const inTrace = () => collector.spans.filter((s) => s.traceId === traceId);
    const has = (service: string, name: RegExp) => inTrace().some((s) => s.service === service && name.test(s.name));
    // Each process exports on its own schedule (about every second).
    const seen = () =>
      inTrace()
        .map((s) => `${s.service} ${s.name}`)
        .join(", ");
    await eventually(
      () =>
        has("gateway", /^POST \/v1\/tasks$/) &&
        has("tasks", /^tasks\/createTask$/) &&
        has("tasks", /^db\./) &&
        has("tasks", / publish$/) &&
        has("webhooks", / process$/) &&
        has("delivery", /^webhook POST$/),
      { what: "every hop's span", timeoutMs: 20_000, intervalMs: 100 },
    ).catch((e: unknown) => {
      throw new Error(`${String(e)}; spans of the trace so far: ${seen() || "none"} (${collector.spans.length} spans in all)`);
    });

    const spans = inTrace();
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    const one = (service: string, name: RegExp) => {
      const s = spans.find((x) => x.service === service && name.test(x.name));
      if (!s) throw new Error(`no ${service} span ${name}`);
      return s;
    };
    // The chain, each hop the child of the one before it.
    const server = one("gateway", /^POST \/v1\/tasks$/);
    expect(server.parentSpanId).toBe(parent);
    const rpcClient = one("gateway", /^tasks\/createTask$/);
    expect(rpcClient.parentSpanId).toBe(server.spanId);
    const rpcServer = one("tasks", /^tasks\/createTask$/);
    expect(rpcServer.parentSpanId).toBe(rpcClient.spanId);
    // Creates are group-committed (one statement for the creates that arrived together): its span
    // is in the first create's trace; the outbox row carries each create's own context.
    const statement = spans.find((s) => s.service === "tasks" && /^db\./.test(s.name) && s.parentSpanId === rpcServer.spanId);
    expect(statement, "a database span under the tasks RPC").toBeDefined();
    const publish = one("tasks", / publish$/);
    expect([rpcServer.spanId, statement?.spanId]).toContain(publish.parentSpanId);
    const consumer = one("webhooks", / process$/);
    expect(consumer.parentSpanId).toBe(publish.spanId);
    const call = one("delivery", /^webhook POST$/);
    // The fan-out stored the consumer's context with the delivery; the call continues it.
    expect(byId.get(call.parentSpanId ?? "")?.service).toBe("webhooks");
    // Nothing in the trace is an orphan: every span's parent is in it, or is the caller's.
    for (const s of spans) expect(s.parentSpanId === parent || byId.has(s.parentSpanId ?? ""), `${s.service} ${s.name} has its parent in the trace`).toBe(true);
  });

  it("when a task is changed with a traceparent, then its transaction's span is in the trace and the outbox row written in it carries the transaction's context to the publish", async () => {
    const f = factories(stack);
    const t = await f.tenant();
    await f.close();
    const gw = api(stack.gatewayUrls[0] ?? "");
    const created = await gw.post("/v1/tasks", { title: "to change" }, { token: t.apiKey });
    expect(created.status, created.text).toBe(201);
    const traceId = randomBytes(16).toString("hex");
    const parent = randomBytes(8).toString("hex");
    const patched = await gw.patch(
      `/v1/tasks/${created.body.id}`,
      { title: "changed" },
      { token: t.apiKey, headers: { traceparent: `00-${traceId}-${parent}-01` } },
    );
    expect(patched.status, patched.text).toBe(200);

    const inTrace = () => collector.spans.filter((s) => s.traceId === traceId);
    await eventually(() => inTrace().some((s) => s.name === "db.transaction") && inTrace().some((s) => / publish$/.test(s.name)), {
      what: "the transaction and the publish",
      timeoutMs: 20_000,
      intervalMs: 100,
    });
    const spans = inTrace();
    const rpc = spans.find((s) => s.service === "tasks" && s.name === "tasks/updateTask");
    const tx = spans.find((s) => s.service === "tasks" && s.name === "db.transaction" && s.parentSpanId === rpc?.spanId);
    expect(tx, "a transaction span under tasks/updateTask").toBeDefined();
    const publish = spans.find((s) => / publish$/.test(s.name));
    expect(publish?.parentSpanId).toBe(tx?.spanId);
  });
});
