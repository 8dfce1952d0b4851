import { createClient, unwrap } from "@tasksvc/client";
import { taskNumber, TASK_ID_PATTERN } from "@tasksvc/contracts";
import { api, eventually, factories, startReceiver, startStack, type Receiver, type StartedStack, type Tenant, gatewayUrl, must } from "@tasksvc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// Webhooks as a developer meets them, through HTTP, to a real receiver on 127.0.0.1 that verifies
// every request with `standardwebhooks`: a test event that cannot be taken for a real one, the
// User-Agent every call carries, and "retry now" for a delivery whose next attempt is far away.
const SETTINGS = {
  WEBHOOK_ALLOW_HTTP: "true",
  WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
  // Two attempts: at once, then an hour later. A test that sees a second attempt brought it forward.
  WEBHOOK_RETRY_DELAYS: "0,1h",
  WEBHOOK_TIMEOUT_MS: "5000",
  WEBHOOK_LEASE: "10s",
};

let stack: StartedStack;
let rx: Receiver;
let f: ReturnType<typeof factories>;

beforeAll(async () => {
  stack = await startStack({ env: SETTINGS, replicas: { gateway: 1 } });
  f = factories(stack);
  rx = await startReceiver();
});

afterAll(async () => {
  await rx?.close();
  await f?.close();
  await stack?.stop();
});

const gateway = () => gatewayUrl(stack);
const gw = () => api(gateway());
const client = (t: Tenant) => createClient({ baseUrl: gateway(), token: t.apiKey, retries: 0 });

interface Hook {
  id: string;
  path: string;
}

async function hook(t: Tenant): Promise<Hook> {
  return rx.endpoint(async (url) => unwrap(await client(t).POST("/v1/webhook-endpoints", { body: { url, event_types: ["task.created"] } })));
}

interface Delivery {
  id: string;
  event_id: string;
  state: string;
  attempt_count: number;
  next_attempt_at: string | null;
}

/** The endpoint's only delivery, once `check` passes on it. */
async function deliveryWhen(t: Tenant, h: Hook, what: string, check: (d: Delivery) => void): Promise<Delivery> {
  return eventually(
    async () => {
      const r = await gw().get<{ data: Delivery[] }>(`/v1/webhook-endpoints/${h.id}/deliveries`, { token: t.apiKey });
      const [d, more] = r.body.data;
      expect(more).toBeUndefined();
      expect(d).toBeDefined();
      const delivery = must(d, "the endpoint's delivery");
      check(delivery);
      return delivery;
    },
    { timeoutMs: 20_000, what },
  );
}

const retry = (t: Tenant, h: Hook, d: Delivery) => gw().post(`/v1/webhook-endpoints/${h.id}/deliveries/${d.id}/retry`, undefined, { token: t.apiKey });

describe("test events", () => {
  it("when a test event is sent, then its envelope says test: true and its task is T-0, an id no task has; a real event has no test field", async () => {
    const t = await f.tenant();
    const h = await hook(t);
    // The organization has a real T-1: the sample must not name it.
    unwrap(await client(t).POST("/v1/tasks", { body: { title: "real" } }));
    const [real] = await rx.waitFor(h.path, 1);
    for (const type of ["task.created", "task.updated", "webhook_endpoint.disabled"]) {
      const r = await gw().post(`/v1/webhook-endpoints/${h.id}/test-event`, { event_type: type }, { token: t.apiKey });
      expect(r.status, r.text).toBe(200);
      expect(r.body.outcome).toBe("delivered");
    }
    const got = await rx.waitFor(h.path, 4);
    const samples = got.slice(1);
    for (const s of samples) {
      expect(s.verifiedBy, s.body).toEqual([0]);
      expect(s.event.test, s.body).toBe(true);
    }
    const [created, updated] = samples.map((s) => s.event.data["id"] as string);
    for (const id of [created, updated]) {
      expect(id).toBe("T-0");
      expect(id).toMatch(TASK_ID_PATTERN);
      expect(taskNumber(id as string)).toBeNull();
    }
    expect(real?.event.data["id"]).toBe("T-1");
    expect(real?.event).not.toHaveProperty("test");
    expect(Object.keys(JSON.parse(real?.body ?? "{}"))).toEqual(["type", "timestamp", "data"]);
  });

  it("when verify probes the endpoint, then its envelope says test: true too", async () => {
    const t = await f.tenant();
    const h = await hook(t);
    const r = await gw().post(`/v1/webhook-endpoints/${h.id}/verify`, undefined, { token: t.apiKey });
    expect(r.status, r.text).toBe(200);
    const [probe] = await rx.waitFor(h.path, 1);
    expect(probe?.event).toMatchObject({ type: "webhook.verify", test: true });
  });
});

describe("User-Agent", () => {
  it("when a delivery, a test event or a verify probe arrives, then it carries User-Agent tasksvc-webhooks/1.0", async () => {
    const t = await f.tenant();
    const h = await hook(t);
    unwrap(await client(t).POST("/v1/tasks", { body: { title: "announce me" } }));
    await rx.waitFor(h.path, 1);
    for (const op of ["test-event", "verify"])
      expect((await gw().post(`/v1/webhook-endpoints/${h.id}/${op}`, undefined, { token: t.apiKey })).status).toBe(200);
    const got = await rx.waitFor(h.path, 3);
    expect(got.map((r) => r.userAgent)).toEqual(["tasksvc-webhooks/1.0", "tasksvc-webhooks/1.0", "tasksvc-webhooks/1.0"]);
  });
});

describe("retry now", () => {
  it("when a failed attempt's retry is an hour away, then retry makes it now (202), a repeat makes no second attempt, and a finished delivery is 409", async () => {
    const t = await f.tenant();
    const h = await hook(t);
    rx.answer(h.path, (n) => ({ status: n === 1 ? 503 : 204 }));
    unwrap(await client(t).POST("/v1/tasks", { body: { title: "retry me" } }));
    await rx.waitFor(h.path, 1);
    const waiting = await deliveryWhen(t, h, "the first attempt failed, the next an hour away", (d) => {
      expect(d).toMatchObject({ state: "PENDING", attempt_count: 1 });
      expect(Date.parse(d.next_attempt_at ?? "")).toBeGreaterThan(Date.now() + 30 * 60_000);
    });

    // Replay is for finished deliveries: this one is still pending.
    const replay = await gw().post(`/v1/webhook-endpoints/${h.id}/deliveries/${waiting.id}/replay`, undefined, { token: t.apiKey });
    expect(replay.status, replay.text).toBe(409);
    expect(replay.body.code).toBe("delivery_already_pending");

    const before = Date.now();
    const first = await retry(t, h, waiting);
    expect(first.status, first.text).toBe(202);
    expect(first.body).toMatchObject({ id: waiting.id, event_id: waiting.event_id, attempt_count: 1 });
    // PENDING and due now, or already claimed by the dispatcher.
    if (first.body.state === "PENDING") expect(Date.parse(first.body.next_attempt_at)).toBeLessThanOrEqual(Date.now());
    else expect(first.body.state).toBe("DELIVERING");
    const again = await retry(t, h, waiting);
    expect([202, 409], again.text).toContain(again.status);

    const [, second] = await rx.waitFor(h.path, 2);
    expect(second?.id).toBe(waiting.event_id);
    expect(second?.at).toBeGreaterThanOrEqual(before);
    await deliveryWhen(t, h, "the retry delivered", (d) => expect(d).toMatchObject({ state: "SUCCEEDED", attempt_count: 2, next_attempt_at: null }));
    expect(rx.received(h.path)).toHaveLength(2);

    const finished = await retry(t, h, waiting);
    expect(finished.status, finished.text).toBe(409);
    expect(finished.body.code).toBe("delivery_not_pending");
    expect(rx.received(h.path)).toHaveLength(2);
  });

  it("when an attempt is in flight, then retry answers 202 with the delivery as it is, and no second attempt is made", async () => {
    const t = await f.tenant();
    const h = await hook(t);
    rx.answer(h.path, () => ({ hold: true }));
    unwrap(await client(t).POST("/v1/tasks", { body: { title: "in flight" } }));
    await rx.waitFor(h.path, 1);
    const delivering = await deliveryWhen(t, h, "the attempt in flight", (d) => expect(d.state).toBe("DELIVERING"));
    for (let i = 0; i < 2; i++) {
      const r = await retry(t, h, delivering);
      expect(r.status, r.text).toBe(202);
      expect(r.body).toMatchObject({ id: delivering.id, state: "DELIVERING", attempt_count: 0, next_attempt_at: null });
    }
    rx.release(204);
    await deliveryWhen(t, h, "the held attempt delivered", (d) => expect(d).toMatchObject({ state: "SUCCEEDED", attempt_count: 1 }));
    expect(rx.received(h.path)).toHaveLength(1);
  });

  it("when the delivery is another endpoint's or another organization's, then 404", async () => {
    const owner = await f.tenant();
    const other = await f.tenant();
    const h = await hook(owner);
    const mine = await hook(other);
    unwrap(await client(owner).POST("/v1/tasks", { body: { title: "mine" } }));
    const d = await deliveryWhen(owner, h, "delivered", (x) => expect(x.state).toBe("SUCCEEDED"));
    for (const [t, endpoint] of [
      [other, h],
      [other, mine],
      [owner, { ...h, id: "whe_unknown" }],
    ] as const) {
      const r = await retry(t, endpoint, d);
      expect(r.status, r.text).toBe(404);
      expect(r.body.code).toBe("resource_not_found");
    }
  });
});
