import { createClient, unwrap } from "@tasksvc/client";
import { api, eventually, factories, openSse, startReceiver, startStack, type Receiver, type StartedStack, type Tenant, gatewayUrl } from "@tasksvc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// Endpoint health and its operational events, through HTTP, to a real receiver on 127.0.0.1 that
// verifies every request with `standardwebhooks`: the failure streak and the last success and
// failure times; an endpoint disabled automatically or by hand announced as
// webhook_endpoint.disabled, and enabled again as webhook_endpoint.enabled, to the endpoints that
// name those types (never to the one they describe), in the events feed and on the live stream.
const SETTINGS = {
  WEBHOOK_ALLOW_HTTP: "true",
  WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
  // Three attempts, retries 200 ms apart (±10%).
  WEBHOOK_RETRY_DELAYS: "0,200ms,200ms",
  WEBHOOK_TIMEOUT_MS: "2000",
  WEBHOOK_LEASE: "4s",
  // Shrunk so that a test can reach an automatic disable: 4 failed attempts in a row, at any age.
  WEBHOOK_DISABLE_AFTER: "4",
  WEBHOOK_DISABLE_MIN_AGE: "0s",
};

let stack: StartedStack;
let rx: Receiver;
let f: ReturnType<typeof factories>;

beforeAll(async () => {
  // Two webhooks replicas (the default) record attempts concurrently; one gateway holds the streams.
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
const client = (token: string) => createClient({ baseUrl: gateway(), token, retries: 0 });

type EventTypeName = "task.created" | "task.updated" | "task.archived" | "webhook_endpoint.disabled" | "webhook_endpoint.enabled";

interface Hook {
  id: string;
  path: string;
}

/** An endpoint of `t` at a fresh path of the receiver, which verifies with its secret. */
async function hook(t: Tenant, eventTypes: EventTypeName[] = []): Promise<Hook> {
  return rx.endpoint(async (url) => unwrap(await client(t.apiKey).POST("/v1/webhook-endpoints", { body: { url, event_types: eventTypes } })));
}

const endpoint = async (t: Tenant, h: Hook) =>
  unwrap(await client(t.apiKey).GET("/v1/webhook-endpoints/{endpoint_id}", { params: { path: { endpoint_id: h.id } } }));

const createTask = async (t: Tenant, title: string) => unwrap(await client(t.apiKey).POST("/v1/tasks", { body: { title } }));

describe("endpoint health", () => {
  it("when deliveries fail and then succeed, then failure_count counts the failures in a row and the last failure and success times follow the attempts", async () => {
    const t = await f.tenant();
    const h = await hook(t, ["task.created"]);
    const fresh = await endpoint(t, h);
    expect(fresh).toMatchObject({ failure_count: 0, last_success_at: null, last_failure_at: null });

    // The first two attempts fail (500), the third succeeds.
    rx.answer(h.path, (n) => ({ status: n <= 2 ? 500 : 204 }));
    await createTask(t, "fails twice");
    const failed = await rx.waitFor(h.path, 2, 15_000);
    await eventually(async () => expect(await endpoint(t, h)).toMatchObject({ failure_count: 2 }), { timeoutMs: 15_000, what: "two failures counted" });
    const third = (await rx.waitFor(h.path, 3, 15_000))[2];
    const healed = await eventually(
      async () => {
        const e = await endpoint(t, h);
        expect(e).toMatchObject({ failure_count: 0, enabled: true });
        expect(e.last_success_at).not.toBeNull();
        return e;
      },
      { timeoutMs: 15_000, what: "the success recorded" },
    );
    const secondFailure = failed[1];
    if (!secondFailure || !third || !healed.last_failure_at || !healed.last_success_at) throw new Error("missing attempts");
    // Each time is its attempt's start, so it lies between the requests that bound it.
    expect(Date.parse(healed.last_failure_at)).toBeLessThanOrEqual(secondFailure.at);
    expect(Date.parse(healed.last_failure_at)).toBeGreaterThan(Date.parse(fresh.created_at));
    expect(Date.parse(healed.last_success_at)).toBeGreaterThan(Date.parse(healed.last_failure_at));
    expect(Date.parse(healed.last_success_at)).toBeLessThanOrEqual(third.at);

    // A later failure moves last_failure_at and starts a new streak; last_success_at stays.
    rx.answer(h.path, () => ({ status: 503 }));
    await createTask(t, "fails again");
    const again = await eventually(
      async () => {
        const e = await endpoint(t, h);
        expect(e.failure_count).toBeGreaterThanOrEqual(1);
        return e;
      },
      { timeoutMs: 15_000, what: "the new streak" },
    );
    expect(again.last_success_at).toBe(healed.last_success_at);
    expect(Date.parse(again.last_failure_at ?? "")).toBeGreaterThan(Date.parse(healed.last_success_at));
  });

  it("when many attempts to one endpoint are reported at once, then failure_count is exactly the number that failed in a row", async () => {
    const t = await f.tenant();
    const h = await hook(t, ["task.created"]);
    // Each event's first attempt fails (500); its retry is held open until released. Three events'
    // first attempts race, and are recorded by either webhooks replica: a lost update would count fewer.
    const seen = new Map<string, number>();
    rx.answer(h.path, (_n, r) => {
      const k = (seen.get(r.id) ?? 0) + 1;
      seen.set(r.id, k);
      return k === 1 ? { status: 500 } : { hold: true };
    });
    await Promise.all(Array.from({ length: 3 }, (_, i) => createTask(t, `burst ${i}`)));
    await eventually(async () => expect(rx.holding(h.path)).toBe(3), { timeoutMs: 15_000, what: "three retries held" });
    expect(await endpoint(t, h)).toMatchObject({ failure_count: 3, enabled: true });
    rx.release(200);
    await eventually(async () => expect(await endpoint(t, h)).toMatchObject({ failure_count: 0, enabled: true }), {
      timeoutMs: 15_000,
      what: "the streak back to 0",
    });
  });
});

describe("operational events", () => {
  it("when an endpoint is disabled automatically and enabled again, then another endpoint that names those types receives both, validly signed, and the endpoint itself neither", async () => {
    const t = await f.tenant();
    const failing = await hook(t, ["task.created", "webhook_endpoint.disabled", "webhook_endpoint.enabled"]);
    const watcher = await hook(t, ["webhook_endpoint.disabled", "webhook_endpoint.enabled"]);
    // Every task type, by the empty list: operational events are not among them.
    const everyTask = await hook(t, []);
    rx.answer(failing.path, () => ({ status: 500 }));
    // Two events, three attempts each: the 4th failed attempt in a row disables the endpoint.
    await createTask(t, "one");
    await createTask(t, "two");
    const [disabled] = await rx.waitFor(watcher.path, 1, 20_000);
    expect(disabled?.verifiedBy).toEqual([0]);
    expect(disabled?.event.type).toBe("webhook_endpoint.disabled");
    expect(disabled?.event.data).toMatchObject({
      id: failing.id,
      url: rx.url(failing.path),
      enabled: false,
      disabled_reason: "consecutive_failures",
    });
    // The streak at the disable: the 4th failure or more, since attempts reported together (two
    // workers' reports in one recording) are counted in one statement, which then disables.
    expect(disabled?.event.data.failure_count).toBeGreaterThanOrEqual(4);
    expect(disabled?.event.data.failure_count).toBeLessThanOrEqual(6);
    const now = await endpoint(t, failing);
    expect(now).toMatchObject({ enabled: false, disabled_reason: "consecutive_failures" });

    // Enabled again by hand: announced as webhook_endpoint.enabled, with the streak reset.
    rx.answer(failing.path, () => ({ status: 200 }));
    unwrap(await client(t.apiKey).PATCH("/v1/webhook-endpoints/{endpoint_id}", { params: { path: { endpoint_id: failing.id } }, body: { enabled: true } }));
    const [, enabled] = await rx.waitFor(watcher.path, 2, 20_000);
    expect(enabled?.verifiedBy).toEqual([0]);
    expect(enabled?.event.type).toBe("webhook_endpoint.enabled");
    expect(enabled?.event.data).toMatchObject({ id: failing.id, enabled: true, disabled_reason: null, failure_count: 0 });

    // The feed holds both, the same objects the watcher got, with their webhook-ids.
    const feed = unwrap(await client(t.apiKey).GET("/v1/events", { params: { query: { type: "webhook_endpoint.disabled" } } }));
    expect(feed.data).toEqual([{ id: disabled?.id, ...JSON.parse(disabled?.body ?? "{}") }]);
    const one = unwrap(await client(t.apiKey).GET("/v1/events/{event_id}", { params: { path: { event_id: enabled?.id ?? "" } } }));
    expect(one).toEqual({ id: enabled?.id, ...JSON.parse(enabled?.body ?? "{}") });

    // Nothing operational reached the endpoint they describe, nor the one subscribed to every task type.
    await createTask(t, "a last task");
    await rx.waitFor(everyTask.path, 3, 15_000);
    await eventually(async () => expect(rx.received(failing.path).some((r) => r.event.data["title"] === "a last task")).toBe(true), {
      timeoutMs: 15_000,
      what: "the last task delivered to the re-enabled endpoint",
    });
    const types = (h: Hook) => rx.received(h.path).map((r) => r.event.type);
    expect(types(everyTask)).toEqual(["task.created", "task.created", "task.created"]);
    expect(types(failing).every((x) => x === "task.created")).toBe(true);
    expect(types(watcher)).toEqual(["webhook_endpoint.disabled", "webhook_endpoint.enabled"]);
  });

  it("when an endpoint is disabled by hand, then webhook_endpoint.disabled carries it with no disabled_reason; a PATCH that does not change enabled announces nothing", async () => {
    const t = await f.tenant();
    const target = await hook(t, ["task.created"]);
    const watcher = await hook(t, ["webhook_endpoint.disabled", "webhook_endpoint.enabled"]);
    const patch = (body: { enabled?: boolean; rate_limit?: number | null }) =>
      client(t.apiKey).PATCH("/v1/webhook-endpoints/{endpoint_id}", { params: { path: { endpoint_id: target.id } }, body });
    unwrap(await patch({ rate_limit: 20 }));
    unwrap(await patch({ enabled: true }));
    unwrap(await patch({ enabled: false }));
    unwrap(await patch({ enabled: false }));
    const [got] = await rx.waitFor(watcher.path, 1, 15_000);
    expect(got?.event).toMatchObject({ type: "webhook_endpoint.disabled", data: { id: target.id, enabled: false, disabled_reason: null, rate_limit: 20 } });
    // One event only: the feed has exactly it.
    await eventually(
      async () => {
        const feed = unwrap(await client(t.apiKey).GET("/v1/events", {}));
        expect(feed.data.map((e) => [e.type, e.id])).toEqual([["webhook_endpoint.disabled", got?.id]]);
      },
      { timeoutMs: 10_000, what: "the one event in the feed" },
    );
    expect(rx.received(watcher.path)).toHaveLength(1);
  });

  it("when a credential lacks webhooks:read, then the feed and the stream leave endpoint events out, and asking for them by type is 403", async () => {
    const t = await f.tenant();
    const target = await hook(t, ["task.created"]);
    const readOnly = await f.token(t.organizationId, t.userId, ["tasks:read"]);
    const stream = await openSse(`${gateway()}/v1/events/stream`, { token: t.apiKey });
    const narrow = await openSse(`${gateway()}/v1/events/stream`, { token: readOnly });
    expect([stream.status, narrow.status]).toEqual([200, 200]);
    unwrap(await client(t.apiKey).PATCH("/v1/webhook-endpoints/{endpoint_id}", { params: { path: { endpoint_id: target.id } }, body: { enabled: false } }));
    // The disable travels a longer way (the webhooks outbox first): the task comes after it is published.
    await eventually(async () => expect(unwrap(await client(t.apiKey).GET("/v1/events", {})).data.map((e) => e.type)).toEqual(["webhook_endpoint.disabled"]), {
      timeoutMs: 15_000,
      what: "the disable in the feed",
    });
    await createTask(t, "after the disable");
    const first = await stream.nth(1, 15_000);
    expect(first.event).toBe("webhook_endpoint.disabled");
    expect(JSON.parse(first.data)).toMatchObject({ type: "webhook_endpoint.disabled", data: { id: target.id, enabled: false } });
    // The narrow stream's first message is the task, the disable left out.
    expect((await narrow.nth(1, 15_000)).event).toBe("task.created");
    expect((await stream.nth(2, 15_000)).event).toBe("task.created");
    stream.close();
    narrow.close();

    const all = unwrap(await client(t.apiKey).GET("/v1/events", {}));
    expect(all.data.map((e) => e.type)).toEqual(["task.created", "webhook_endpoint.disabled"]);
    const mine = unwrap(await client(readOnly).GET("/v1/events", {}));
    expect(mine.data.map((e) => e.type)).toEqual(["task.created"]);
    const byId = await gw().get(`/v1/events/${first.id}`, { token: readOnly });
    expect(byId.status, byId.text).toBe(404);
    const asked = await gw().get("/v1/events?type=webhook_endpoint.disabled", { token: readOnly });
    expect(asked.status, asked.text).toBe(403);
    expect(asked.body).toMatchObject({ code: "insufficient_scope" });
    const askedStream = await gw().get("/v1/events/stream?type=task.created,webhook_endpoint.enabled", { token: readOnly });
    expect(askedStream.status, askedStream.text).toBe(403);
  });

  it("when a test event of an endpoint type is sent, then the endpoint gets a signed sample carrying itself", async () => {
    const t = await f.tenant();
    const h = await hook(t, []);
    const probe = unwrap(
      await client(t.apiKey).POST("/v1/webhook-endpoints/{endpoint_id}/test-event", {
        params: { path: { endpoint_id: h.id } },
        body: { event_type: "webhook_endpoint.disabled" },
      }),
    );
    expect(probe.outcome).toBe("delivered");
    const [got] = rx.received(h.path);
    expect(got?.verifiedBy).toEqual([0]);
    expect(got?.event).toMatchObject({ type: "webhook_endpoint.disabled", data: { id: h.id, enabled: false, disabled_reason: "consecutive_failures" } });
    // Only a sample: the endpoint is as it was.
    expect(await endpoint(t, h)).toMatchObject({ enabled: true, disabled_reason: null });
  });
});
