import { createClient, unwrap } from "@tasksvc/client";
import { SCOPES } from "@tasksvc/contracts";
import { api, eventually, factories, startReceiver, startStack, type Receiver, type StartedStack, type Tenant, gatewayUrl } from "@tasksvc/testing";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// GET /v1/webhook-endpoints/{id}/stats end to end: deliveries to a real receiver on 127.0.0.1
// that answers 2xx, 500 or first 500 then 2xx, and the stats compared with what the delivery log
// and the attempts lists say through the same API, before and after the compaction folds the
// deltas into the rollup. Its own stack: the receiver is private and plain http, and retries are
// 200 ms apart.
const SETTINGS = {
  WEBHOOK_ALLOW_HTTP: "true",
  WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
  // Three attempts, retries 200 ms apart (±10%).
  WEBHOOK_RETRY_DELAYS: "0,200ms,200ms",
  WEBHOOK_TIMEOUT_MS: "2000",
  WEBHOOK_LEASE: "4s",
};

let stack: StartedStack;
let rx: Receiver;
let db: postgres.Sql;
let f: ReturnType<typeof factories>;

beforeAll(async () => {
  stack = await startStack({ env: SETTINGS, replicas: { gateway: 1, keys: 1, tasks: 1 } });
  db = postgres(stack.databaseUrl, { max: 2, onnotice: () => {} });
  f = factories(stack);
  rx = await startReceiver();
});

afterAll(async () => {
  await rx?.close();
  await f?.close();
  await db?.end({ timeout: 1 });
  await stack?.stop();
});

const gw = () => api(gatewayUrl(stack));
const client = (t: Tenant) => createClient({ baseUrl: gatewayUrl(stack), token: t.apiKey, retries: 0 });

/** An endpoint of `t` at a fresh path of the receiver. */
async function hook(t: Tenant): Promise<{ id: string; path: string }> {
  return rx.endpoint(async (url) => unwrap(await client(t).POST("/v1/webhook-endpoints", { body: { url } })));
}

const FINAL = new Set(["SUCCEEDED", "FAILED", "DISABLED"]);

/** Polls the rows (not the API, whose burst limit is for clients) until every one of `n` deliveries has finished. */
async function allFinished(endpointId: string, n: number): Promise<void> {
  await eventually(
    async () => {
      const rows = await db<{ state: string }[]>`select state from webhooks.deliveries where endpoint_id = ${endpointId}`;
      if (rows.length !== n || !rows.every((r) => FINAL.has(r.state))) throw new Error(`the delivery rows are ${JSON.stringify(rows)}`);
    },
    { timeoutMs: 20_000, intervalMs: 100, what: "every delivery finished" },
  );
}

/** Nearest-rank percentile: the smallest duration with at least p of them at or below it. */
const nearestRank = (sorted: number[], p: number) => (sorted.length === 0 ? null : (sorted[Math.ceil(p * sorted.length) - 1] ?? null));

/** What the stats must say, from the delivery log and each delivery's attempts list, through the API. */
async function fromTheLog(t: Tenant, endpointId: string, since: string) {
  const c = client(t);
  const deliveries = { pending: 0, delivering: 0, succeeded: 0, failed: 0, disabled: 0 };
  const attempts = { total: 0, failed: 0 };
  const durations: number[] = [];
  for await (const d of c.pages("/v1/webhook-endpoints/{endpoint_id}/deliveries", {}, { endpoint_id: endpointId })) {
    if (Date.parse(d.created_at) < Date.parse(since)) continue;
    const key = d.state.toLowerCase() as keyof typeof deliveries;
    deliveries[key] += 1;
    for await (const a of c.pages(
      "/v1/webhook-endpoints/{endpoint_id}/deliveries/{delivery_id}/attempts",
      {},
      { endpoint_id: endpointId, delivery_id: d.id },
    )) {
      attempts.total += 1;
      if (a.outcome !== "delivered") attempts.failed += 1;
      if (a.duration_ms !== null) durations.push(a.duration_ms);
    }
  }
  durations.sort((x, y) => x - y);
  return { deliveries, attempts, p50: nearestRank(durations, 0.5), p99: nearestRank(durations, 0.99) };
}

async function stats(t: Tenant, endpointId: string, since?: string) {
  const r = await gw().get(`/v1/webhook-endpoints/${endpointId}/stats${since === undefined ? "" : `?since=${encodeURIComponent(since)}`}`, {
    token: t.apiKey,
  });
  expect(r.status, r.text).toBe(200);
  return r.body;
}

/** The stats equal the log's figures; the percentiles exactly up to 100 ms, within 2.6% above. */
async function expectAsTheLog(t: Tenant, endpointId: string, since: string | undefined, what: string) {
  const got = await stats(t, endpointId, since);
  const want = await fromTheLog(t, endpointId, got.since);
  const why = `${what}: ${JSON.stringify(got)} against ${JSON.stringify(want)}`;
  expect(got.deliveries, why).toEqual(want.deliveries);
  expect(got.attempts, why).toEqual(want.attempts);
  for (const p of ["p50", "p99"] as const) {
    const exact = want[p];
    if (exact === null || exact <= 100) expect(got.latency_ms[p], why).toBe(exact);
    else expect(Math.abs(got.latency_ms[p] - exact), why).toBeLessThanOrEqual(0.026 * exact);
  }
  return got;
}

describe("webhook endpoint stats", () => {
  it("when deliveries succeed, fail after their retries, or succeed on a retry, then the stats equal the delivery log and the attempts lists, before and after compaction", async () => {
    const t = await f.tenant();
    const ok = await hook(t);
    const bad = await hook(t);
    const flaky = await hook(t);
    rx.answer(bad.path, () => ({ status: 500 }));
    // The first attempt of each event fails, the second succeeds.
    const tries = new Map<string, number>();
    rx.answer(flaky.path, (_n, r) => {
      const n = (tries.get(r.id) ?? 0) + 1;
      tries.set(r.id, n);
      return { status: n === 1 ? 500 : 204 };
    });
    const before = new Date(Date.now() - 1000).toISOString();
    for (let i = 0; i < 5; i++) unwrap(await client(t).POST("/v1/tasks", { body: { title: `counted ${i}` } }));
    for (const h of [ok, bad, flaky]) await allFinished(h.id, 5);

    const okStats = await expectAsTheLog(t, ok.id, undefined, "2xx");
    expect(okStats.deliveries).toEqual({ pending: 0, delivering: 0, succeeded: 5, failed: 0, disabled: 0 });
    expect(okStats.attempts).toEqual({ total: 5, failed: 0 });
    expect(okStats.latency_ms.p50).toEqual(expect.any(Number));
    const badStats = await expectAsTheLog(t, bad.id, before, "500");
    expect(badStats.deliveries).toEqual({ pending: 0, delivering: 0, succeeded: 0, failed: 5, disabled: 0 });
    expect(badStats.attempts).toEqual({ total: 15, failed: 15 });
    const flakyStats = await expectAsTheLog(t, flaky.id, before, "500 then 2xx");
    expect(flakyStats.attempts).toEqual({ total: 10, failed: 5 });

    // A window that starts at the third delivery (its created_at, to the millisecond).
    const log = unwrap(await client(t).GET("/v1/webhook-endpoints/{endpoint_id}/deliveries", { params: { path: { endpoint_id: bad.id } } }));
    const third = log.data[2]?.created_at ?? "";
    const partial = await expectAsTheLog(t, bad.id, third, "from the third delivery");
    expect(partial.since).toBe(third);
    expect(partial.deliveries.failed).toBeGreaterThanOrEqual(3);

    // Once the compaction has folded every delta into the rollup, the same figures.
    await eventually(
      async () => {
        const [r] = await db<{ n: number }[]>`
          select count(*)::int as n from webhooks.delivery_stat_deltas where endpoint_id in (${ok.id}, ${bad.id}, ${flaky.id})`;
        if (r?.n !== 0) throw new Error(`${r?.n} deltas left`);
      },
      { timeoutMs: 20_000, intervalMs: 200, what: "the compaction" },
    );
    for (const h of [ok, bad, flaky]) await expectAsTheLog(t, h.id, before, "after compaction");
    expect(await stats(t, bad.id, third)).toEqual(partial);
  }, 60_000);

  it("when since is not a date-time, then 400 validation_failed naming since; a window before the retention answers its start, 30 days back", async () => {
    const t = await f.tenant();
    const h = await hook(t);
    const r = await gw().get(`/v1/webhook-endpoints/${h.id}/stats?since=yesterday`, { token: t.apiKey });
    expect(r.status, r.text).toBe(400);
    expect(r.body).toMatchObject({ code: "validation_failed", errors: [{ pointer: "/since" }] });
    const old = await stats(t, h.id, "2000-01-01T00:00:00Z");
    expect(Math.abs(Date.parse(old.since) - (Date.now() - 30 * 24 * 3600_000))).toBeLessThan(60_000);
    expect(old).toMatchObject({
      deliveries: { pending: 0, delivering: 0, succeeded: 0, failed: 0, disabled: 0 },
      attempts: { total: 0, failed: 0 },
      latency_ms: { p50: null, p99: null },
    });
    const fromNow = await stats(t, h.id);
    expect(Math.abs(Date.parse(fromNow.since) - (Date.now() - 24 * 3600_000))).toBeLessThan(60_000);
  });

  it("when the endpoint is unknown or another organization's, then 404 resource_not_found; without webhooks:read, 403", async () => {
    const t = await f.tenant();
    const other = await f.tenant();
    const h = await hook(other);
    for (const id of ["whe_doesNotExist000000000000", h.id]) {
      const r = await gw().get(`/v1/webhook-endpoints/${id}/stats`, { token: t.apiKey });
      expect(r.status, r.text).toBe(404);
      expect(r.body.code).toBe("resource_not_found");
    }
    const token = await f.token(
      other.organizationId,
      other.userId,
      SCOPES.filter((s) => s !== "webhooks:read"),
    );
    const denied = await gw().get(`/v1/webhook-endpoints/${h.id}/stats`, { token });
    expect(denied.status, denied.text).toBe(403);
    expect(denied.body.code).toBe("insufficient_scope");
  });
});
