import { randomUUID } from "node:crypto";
import { Task } from "@tasksvc/contracts";
import { createClient, unwrap } from "@tasksvc/client";
import {
  api,
  deliveryWorkers,
  eventually,
  factories,
  startReceiver,
  startStack,
  type Receiver,
  type StartedStack,
  type Tenant,
  gatewayUrl,
} from "@tasksvc/testing";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// Issue 11: delivery end to end, through HTTP, to a real receiver on 127.0.0.1 that verifies every
// request with `standardwebhooks` (the reference verifier). This file runs its own stack: the
// shared one keeps the production defaults (https only, private targets refused), and here the
// delivery worker is a separate process, so a test can kill it mid-call.
const SETTINGS = {
  WEBHOOK_ALLOW_HTTP: "true",
  WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
  // Four attempts, retries 300 ms apart (±10%).
  WEBHOOK_RETRY_DELAYS: "0,300ms,300ms,300ms",
  WEBHOOK_TIMEOUT_MS: "2000",
  WEBHOOK_LEASE: "4s",
  WEBHOOK_ENDPOINT_CONCURRENCY: "2",
  // Few worker slots, so an endpoint that took more than its share would starve the others.
  WEBHOOK_CONCURRENCY: "4",
  WEBHOOK_DISABLE_AFTER: "3",
  WEBHOOK_DISABLE_MIN_AGE: "1h",
};

let stack: StartedStack;
let rx: Receiver;
let db: postgres.Sql;
let f: ReturnType<typeof factories>;
let workers: ReturnType<typeof deliveryWorkers>;

beforeAll(async () => {
  stack = await startStack({ env: SETTINGS, replicas: { delivery: 0, gateway: 1, keys: 1, tasks: 1 } });
  db = postgres(stack.databaseUrl, { max: 2, onnotice: () => {} });
  f = factories(stack);
  rx = await startReceiver();
  workers = deliveryWorkers(stack, SETTINGS, process.env);
  workers.start();
});

afterAll(async () => {
  await workers?.killAll();
  await rx?.close();
  await f?.close();
  await db?.end({ timeout: 1 });
  await stack?.stop();
});

const gw = () => api(gatewayUrl(stack));

interface Hook {
  id: string;
  secret: string;
  path: string;
}

// Fixtures and the delivery log go through the typed client (@tasksvc/client).
const client = (t: Tenant) => createClient({ baseUrl: gatewayUrl(stack), token: t.apiKey, retries: 0 });

/** An endpoint of `t` at a fresh path of the receiver, which verifies with its secret. */
async function hook(t: Tenant, body: { event_types?: Array<"task.created" | "task.updated" | "task.archived"> } = {}): Promise<Hook> {
  return rx.endpoint(async (url) => unwrap(await client(t).POST("/v1/webhook-endpoints", { body: { url, ...body } })));
}

async function createTask(t: Tenant, title = "deliver me") {
  return unwrap(await client(t).POST("/v1/tasks", { body: { title } }));
}

interface DeliveryRow {
  id: string;
  state: string;
  attempt_count: number;
  last_status: number | null;
  event_id: string;
}

async function deliveries(t: Tenant, h: Hook): Promise<DeliveryRow[]> {
  const rows: DeliveryRow[] = [];
  for await (const d of client(t).pages("/v1/webhook-endpoints/{endpoint_id}/deliveries", {}, { endpoint_id: h.id })) rows.push(d);
  return rows;
}

/**
 * Polls the delivery rows until `ok` holds (15 s at most), then answers the log through the API.
 * Polling reads the table: the API's burst limit is for clients, not for a test's busy wait.
 */
async function deliveriesWhen(t: Tenant, h: Hook, ok: (rows: DeliveryRow[]) => boolean): Promise<DeliveryRow[]> {
  await eventually(
    async () => {
      const rows = await db<
        DeliveryRow[]
      >`select id, state, attempt_count, last_status, event_id from webhooks.deliveries where endpoint_id = ${h.id} order by created_at desc, id desc`;
      if (!ok(rows)) throw new Error(`the delivery rows are ${JSON.stringify(rows)}`);
    },
    { timeoutMs: 15_000, intervalMs: 100, what: "the delivery rows" },
  );
  return deliveries(t, h);
}

async function endpoint(t: Tenant, h: Hook) {
  const r = await gw().get(`/v1/webhook-endpoints/${h.id}`, { token: t.apiKey });
  expect(r.status, r.text).toBe(200);
  return r.body;
}

describe("webhook delivery", () => {
  it("when a task is created, then the receiver gets it signed per Standard Webhooks, webhook-id the event id, and the log shows SUCCEEDED", async () => {
    const t = await f.tenant();
    const h = await hook(t);
    const task = await createTask(t);
    const [got] = await rx.waitFor(h.path, 1);
    expect(got?.verifiedBy).toEqual([0]);
    expect(got?.event.type).toBe("task.created");
    expect(got?.event.data["id"]).toBe(task.id);
    expect(got?.event.timestamp).toEqual(expect.stringMatching(/Z$/));
    const rows = await deliveriesWhen(t, h, (d) => d[0]?.state === "SUCCEEDED");
    expect(rows).toEqual([expect.objectContaining({ state: "SUCCEEDED", attempt_count: 1, last_status: 200, event_id: got?.id, next_attempt_at: null })]);
    const attempts = await gw().get(`/v1/webhook-endpoints/${h.id}/deliveries/${rows[0]?.id}/attempts`, { token: t.apiKey });
    expect(attempts.status, attempts.text).toBe(200);
    expect(attempts.body.data).toEqual([expect.objectContaining({ attempt: 1, outcome: "delivered", status: 200, error_class: null })]);
    expect(attempts.text).not.toContain(h.secret);
  });

  it("when tasks change, then GET /v1/events holds each delivered body, with the delivery's webhook-id as its id (issue 16)", async () => {
    const t = await f.tenant();
    const h = await hook(t);
    const task = await createTask(t, "feed me");
    unwrap(await client(t).PATCH("/v1/tasks/{task_id}", { params: { path: { task_id: task.id } }, body: { status: "IN_PROGRESS" } }));
    unwrap(await client(t).POST("/v1/tasks/{task_id}/archive", { params: { path: { task_id: task.id } } }));
    const got = await rx.waitFor(h.path, 3);
    const feed = unwrap(await client(t).GET("/v1/events", { params: { query: { limit: 10 } } }));
    expect(feed.data.map((e) => e.type)).toEqual(["task.archived", "task.updated", "task.created"]);
    for (const delivered of got) {
      const item = feed.data.find((e) => e.id === delivered.id);
      expect(item, delivered.id).toBeDefined();
      // The feed's item is the delivered body plus its webhook-id: the same object, field for field.
      const { id, ...body } = item ?? { id: "" };
      expect(id).toBe(delivered.id);
      expect(body).toStrictEqual(JSON.parse(delivered.body));
      // And byte for byte: the feed's text (JSON.parse keeps key order) is the body with the id first.
      expect(`{"id":${JSON.stringify(id)},${delivered.body.slice(1)}`).toBe(JSON.stringify(item));
      expect(unwrap(await client(t).GET("/v1/events/{event_id}", { params: { path: { event_id: delivered.id } } }))).toStrictEqual(item);
    }
  });

  it("when the endpoint fails twice, then it is retried on the schedule with the same webhook-id and succeeds on the third attempt", async () => {
    const t = await f.tenant();
    const h = await hook(t);
    rx.answer(h.path, (n) => (n <= 2 ? { status: 500 } : { status: 204 }));
    await createTask(t);
    const got = await rx.waitFor(h.path, 3);
    expect(new Set(got.map((g) => g.id)).size).toBe(1);
    expect(got.every((g) => g.verifiedBy.length === 1)).toBe(true);
    const rows = await deliveriesWhen(t, h, (d) => d[0]?.state === "SUCCEEDED");
    expect(rows[0]).toEqual(expect.objectContaining({ state: "SUCCEEDED", attempt_count: 3, last_status: 204 }));
    const attempts = await gw().get(`/v1/webhook-endpoints/${h.id}/deliveries/${rows[0]?.id}/attempts`, { token: t.apiKey });
    expect(attempts.body.data.map((a: { status: number }) => a.status)).toEqual([500, 500, 204]);
  });

  it("when every attempt fails, then the delivery is FAILED after the schedule's four attempts, and a 3xx counts as a failure (never followed)", async () => {
    const t = await f.tenant();
    const h = await hook(t);
    const other = await f.tenant();
    const witness = await hook(other);
    const target = `/${randomUUID()}`;
    rx.answer(h.path, () => ({ status: 302, headers: { location: rx.url(target) } }));
    await createTask(t);
    await rx.waitFor(h.path, 4);
    const rows = await deliveriesWhen(t, h, (d) => d[0]?.state === "FAILED");
    expect(rows[0]).toEqual(expect.objectContaining({ state: "FAILED", attempt_count: 4, last_status: 302, next_attempt_at: null }));
    // A witness, not a pause: a delivery that starts now and fails twice gets its third attempt
    // two retry delays later, when a fifth attempt here (one delay after the fourth) would have come.
    rx.answer(witness.path, (n) => (n <= 2 ? { status: 500 } : { status: 204 }));
    await createTask(other);
    await rx.waitFor(witness.path, 3);
    expect(rx.received(h.path)).toHaveLength(4);
    expect(rx.received(target)).toHaveLength(0);
    const attempts = await gw().get(`/v1/webhook-endpoints/${h.id}/deliveries/${rows[0]?.id}/attempts`, { token: t.apiKey });
    expect(attempts.body.data.map((a: { outcome: string }) => a.outcome)).toEqual([
      "redirect_blocked",
      "redirect_blocked",
      "redirect_blocked",
      "redirect_blocked",
    ]);
  });

  it("when the endpoint answers 503 with Retry-After, then the next attempt waits for it rather than the 300 ms schedule", async () => {
    const t = await f.tenant();
    const h = await hook(t);
    rx.answer(h.path, (n) => (n === 1 ? { status: 503, headers: { "retry-after": "2" } } : { status: 200 }));
    await createTask(t);
    const got = await rx.waitFor(h.path, 2);
    expect((got[1]?.at ?? 0) - (got[0]?.at ?? 0)).toBeGreaterThanOrEqual(1900);
  });

  it("when the endpoint answers 410 Gone, then it is disabled at once with a reason and its other pending deliveries become DISABLED", async () => {
    const t = await f.tenant();
    const h = await hook(t);
    rx.answer(h.path, () => ({ status: 410 }));
    await createTask(t);
    await rx.waitFor(h.path, 1);
    const e = await pollEndpoint(t, h, (x) => x.enabled === false);
    expect(e).toEqual(expect.objectContaining({ enabled: false, disabled_reason: "endpoint_gone" }));
    const rows = await deliveriesWhen(t, h, (d) => d[0]?.state === "DISABLED");
    expect(rows[0]).toEqual(expect.objectContaining({ state: "DISABLED", attempt_count: 1, last_status: 410 }));
    // A disabled endpoint gets no more deliveries: an event's rows are written in one statement,
    // so once another endpoint of the organization has this event, a row for it would be there.
    const witness = await hook(t);
    const next = await createTask(t);
    const [seen] = await rx.waitFor(witness.path, 1);
    expect(seen?.event.data["id"]).toBe(next.id);
    expect(await db`select state from webhooks.deliveries where endpoint_id = ${h.id}`).toEqual([{ state: "DISABLED" }]);
    expect(rx.received(h.path)).toHaveLength(1);
  });

  it("when failures reach WEBHOOK_DISABLE_AFTER, then the endpoint is disabled only once the streak is older than WEBHOOK_DISABLE_MIN_AGE", async () => {
    const t = await f.tenant();
    const h = await hook(t);
    rx.answer(h.path, () => ({ status: 500 }));
    await createTask(t);
    await rx.waitFor(h.path, 4);
    await deliveriesWhen(t, h, (d) => d[0]?.state === "FAILED");
    // Four consecutive failures (over 3), but the streak is minutes old, not an hour: still enabled.
    expect(await endpoint(t, h)).toEqual(expect.objectContaining({ enabled: true, disabled_reason: null }));
    const [row] = await db<{ failure_count: number }[]>`select failure_count from webhooks.endpoints where id = ${h.id}`;
    expect(row?.failure_count).toBe(4);
    // The streak began two hours ago: the next failure disables.
    await db`update webhooks.endpoints set failing_since = now() - interval '2 hours' where id = ${h.id}`;
    await createTask(t);
    await rx.waitFor(h.path, 5);
    const e = await pollEndpoint(t, h, (x) => x.enabled === false);
    expect(e).toEqual(expect.objectContaining({ enabled: false, disabled_reason: "consecutive_failures" }));
    // Enabling through the API resets the count.
    const on = await gw().patch(`/v1/webhook-endpoints/${h.id}`, { enabled: true }, { token: t.apiKey });
    expect(on.body).toEqual(expect.objectContaining({ enabled: true, disabled_reason: null }));
    const [after] = await db<{ failure_count: number }[]>`select failure_count from webhooks.endpoints where id = ${h.id}`;
    expect(after?.failure_count).toBe(0);
  });

  it("when the endpoint is deleted while a retry is pending, then nothing more is sent", async () => {
    const t = await f.tenant();
    const h = await hook(t);
    const other = await f.tenant();
    const witness = await hook(other);
    rx.answer(h.path, () => ({ status: 503, headers: { "retry-after": "2" } }));
    await createTask(t);
    await rx.waitFor(h.path, 1);
    await deliveriesWhen(t, h, (d) => d[0]?.state === "PENDING" && d[0]?.attempt_count === 1);
    const del = await gw().delete(`/v1/webhook-endpoints/${h.id}`, { token: t.apiKey });
    expect(del.status, del.text).toBe(200);
    // A witness, not a pause: a delivery that starts now and is told the same Retry-After gets its
    // retry after the time the deleted endpoint's retry was due, on the dispatcher's real clock.
    rx.answer(witness.path, (n) => (n === 1 ? { status: 503, headers: { "retry-after": "2" } } : { status: 204 }));
    await createTask(other);
    await rx.waitFor(witness.path, 2);
    expect(rx.received(h.path)).toHaveLength(1);
    expect(await db`select 1 from webhooks.deliveries where endpoint_id = ${h.id}`).toHaveLength(0);
  });

  it("when the secret is rotated, then deliveries carry two signatures, one verifying with each secret", async () => {
    const t = await f.tenant();
    const h = await hook(t);
    const r = await gw().post(`/v1/webhook-endpoints/${h.id}/rotate-secret`, undefined, { token: t.apiKey, headers: { "idempotency-key": randomUUID() } });
    expect(r.status, r.text).toBe(200);
    rx.expect(h.path, [r.body.secret, h.secret]);
    await createTask(t);
    const [got] = await rx.waitFor(h.path, 1);
    expect(got?.signature.split(" ")).toHaveLength(2);
    // Each secret verifies on its own: the new one and, during the window, the previous one.
    expect(got?.verifiedBy).toEqual([0, 1]);
  });

  it("when one endpoint hangs, then another endpoint's deliveries are not held up: the hanging one has at most WEBHOOK_ENDPOINT_CONCURRENCY calls in flight", async () => {
    const t = await f.tenant();
    const slow = await hook(t);
    const fast = await hook(t);
    rx.answer(slow.path, () => ({ hold: true }));
    for (let i = 0; i < 6; i++) await createTask(t, `burst ${i}`);
    // All six reach the healthy endpoint while the hanging one still holds its first calls
    // (they end only at WEBHOOK_TIMEOUT_MS, 2 s).
    await rx.waitFor(fast.path, 6);
    expect(rx.holding(slow.path)).toBeLessThanOrEqual(2);
    const [inFlight] = await db<{ n: number }[]>`select count(*)::int as n from webhooks.deliveries where endpoint_id = ${slow.id} and state = 'DELIVERING'`;
    expect(inFlight?.n).toBeLessThanOrEqual(2);
    rx.answer(slow.path, () => ({ status: 200 }));
    rx.release(200);
    await rx.waitFor(slow.path, 6);
    await deliveriesWhen(t, slow, (d) => d.length === 6 && d.every((x) => x.state === "SUCCEEDED"));
  });

  it("when the worker is killed during a call, then after the lease the delivery is sent again with the same webhook-id and succeeds", async () => {
    const t = await f.tenant();
    const h = await hook(t);
    rx.answer(h.path, (n) => (n === 1 ? { hold: true } : { status: 200 }));
    await createTask(t);
    const [first] = await rx.waitFor(h.path, 1);
    await workers?.killAll();
    rx.release(200); // the dead worker never hears this answer
    workers.start();
    const got = await rx.waitFor(h.path, 2, 20_000);
    expect(got[1]?.id).toBe(first?.id);
    expect(got[1]?.verifiedBy).toEqual([0]);
    const rows = await deliveriesWhen(t, h, (d) => d[0]?.state === "SUCCEEDED");
    expect(rows[0]).toEqual(expect.objectContaining({ state: "SUCCEEDED", attempt_count: 2, last_status: 200 }));
    const attempts = await gw().get(`/v1/webhook-endpoints/${h.id}/deliveries/${rows[0]?.id}/attempts`, { token: t.apiKey });
    expect(attempts.body.data).toEqual([
      expect.objectContaining({ attempt: 1, outcome: "no_outcome", error_class: "lease_expired", status: null }),
      expect.objectContaining({ attempt: 2, outcome: "delivered", status: 200 }),
    ]);
  }, 40_000);

  it("when test-event targets a redirecting URL, then the outcome is redirect_blocked and the redirect is not followed", async () => {
    const t = await f.tenant();
    const h = await hook(t);
    const target = `/${randomUUID()}`;
    rx.answer(h.path, () => ({ status: 307, headers: { location: rx.url(target) } }));
    const r = await gw().post(`/v1/webhook-endpoints/${h.id}/test-event`, {}, { token: t.apiKey });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toEqual({ outcome: "redirect_blocked", status: 307, duration_ms: expect.any(Number) });
    expect(rx.received(h.path)).toHaveLength(1);
    expect(rx.received(h.path)[0]?.verifiedBy).toEqual([0]);
    expect(rx.received(target)).toHaveLength(0);
    expect(await deliveries(t, h)).toEqual([]);
  });
});

const deliveryCount = async (endpointId: string) => (await db`select count(*)::int as n from webhooks.deliveries where endpoint_id = ${endpointId}`)[0]?.["n"];

// Test events and verify: one synchronous signed call each, no delivery row (spec 4.1, DESIGN.md 4).
describe("probes to a receiver", () => {
  it("when a test event is sent, then the receiver gets one signed sample Task, the answer is delivered with its status, and no delivery row exists", async () => {
    const t = await f.tenant();
    const h = await hook(t);
    rx.answer(h.path, () => ({ status: 204 }));
    const r = await gw().post(`/v1/webhook-endpoints/${h.id}/test-event`, { event_type: "task.updated" }, { token: t.apiKey });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toEqual({ outcome: "delivered", status: 204, duration_ms: expect.any(Number) });
    const [got] = rx.received(h.path);
    expect(got?.verifiedBy, JSON.stringify(got)).toEqual([0]);
    expect(got?.id).toMatch(/^evt_/);
    expect(got?.event.type).toBe("task.updated");
    const parsed = Task.safeParse(got?.event.data);
    expect(parsed.success, JSON.stringify(parsed.error?.issues)).toBe(true);
    expect(rx.received(h.path)).toHaveLength(1);
    expect(await deliveryCount(h.id)).toBe(0);
    const log = await gw().get(`/v1/webhook-endpoints/${h.id}/deliveries`, { token: t.apiKey });
    expect(log.body.data, log.text).toEqual([]);
  });

  it("when verify gets a 500, then verified stays false; when it then gets a 2xx, then the endpoint is verified", async () => {
    const t = await f.tenant();
    const h = await hook(t);
    rx.answer(h.path, (n) => ({ status: n === 1 ? 500 : 200 }));
    const path = `/v1/webhook-endpoints/${h.id}/verify`;
    const failed = await gw().post(path, undefined, { token: t.apiKey });
    expect(failed.status, failed.text).toBe(200);
    expect(failed.body).toMatchObject({ status: 500, verified: false });
    expect(failed.body.outcome).not.toBe("delivered");
    expect((await gw().get(`/v1/webhook-endpoints/${h.id}`, { token: t.apiKey })).body.verified).toBe(false);
    const ok = await gw().post(path, undefined, { token: t.apiKey });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body).toEqual({ outcome: "delivered", status: 200, duration_ms: expect.any(Number), verified: true });
    expect((await gw().get(`/v1/webhook-endpoints/${h.id}`, { token: t.apiKey })).body.verified).toBe(true);
    const [probe] = rx.received(h.path);
    expect(probe?.verifiedBy).toEqual([0]);
    expect(probe?.event).toMatchObject({ type: "webhook.verify", data: { endpoint_id: h.id } });
    expect(await deliveryCount(h.id)).toBe(0);
  });

  it("when the secret was rotated, then a probe carries two signatures, one per secret, each verifying alone", async () => {
    const t = await f.tenant();
    const h = await hook(t);
    const rotated = await gw().post(`/v1/webhook-endpoints/${h.id}/rotate-secret`, undefined, { token: t.apiKey });
    expect(rotated.status, rotated.text).toBe(200);
    rx.expect(h.path, [rotated.body.secret, h.secret]);
    const r = await gw().post(`/v1/webhook-endpoints/${h.id}/test-event`, undefined, { token: t.apiKey });
    expect(r.body.outcome, r.text).toBe("delivered");
    const [got] = rx.received(h.path);
    expect(got?.signature.split(" ")).toHaveLength(2);
    expect(got?.verifiedBy, JSON.stringify(got)).toEqual([0, 1]);
    expect(got?.event.type).toBe("task.created");
  });
});

async function pollEndpoint(t: Tenant, h: Hook, ok: (e: { enabled: boolean }) => boolean) {
  const row = async () => (await db<{ enabled: boolean }[]>`select enabled from webhooks.endpoints where id = ${h.id}`)[0] ?? { enabled: true };
  await eventually(async () => ok(await row()), { timeoutMs: 15_000, intervalMs: 100, what: `endpoint ${h.id} in the expected state` });
  return endpoint(t, h);
}
