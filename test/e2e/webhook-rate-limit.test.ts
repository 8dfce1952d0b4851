import { randomUUID } from "node:crypto";
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

// An endpoint's rate_limit (DESIGN.md 11) end to end: two webhooks replicas dispatch (their passes
// take turns), two delivery worker processes send, a receiver on 127.0.0.1 verifies every
// request. The limit counts starts of attempts, so the one-second windows are checked on the
// attempts' own times (attempted_at, the worker's clock when it called); the receiver's arrival
// times show the pace as the endpoint sees it.
const SETTINGS = {
  WEBHOOK_ALLOW_HTTP: "true",
  WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
  WEBHOOK_TIMEOUT_MS: "5000",
  WEBHOOK_LEASE: "30s",
};

let stack: StartedStack;
let rx: Receiver;
let db: postgres.Sql;
let f: ReturnType<typeof factories>;
let workers: ReturnType<typeof deliveryWorkers>;

beforeAll(async () => {
  stack = await startStack({ env: SETTINGS, replicas: { delivery: 0, gateway: 1, keys: 1, tasks: 1, webhooks: 2 } });
  db = postgres(stack.databaseUrl, { max: 2, onnotice: () => {} });
  f = factories(stack);
  rx = await startReceiver();
  workers = deliveryWorkers(stack, SETTINGS, process.env);
  workers.start();
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
const client = (t: Tenant) => createClient({ baseUrl: gatewayUrl(stack), token: t.apiKey, retries: 0 });

interface Hook {
  id: string;
  path: string;
}

/** An endpoint of `t` at a fresh path of the receiver, which verifies with its secret. */
async function hook(t: Tenant, rateLimit: number | null): Promise<Hook> {
  const created = await rx.endpoint(async (url) => unwrap(await client(t).POST("/v1/webhook-endpoints", { body: { url, rate_limit: rateLimit } })));
  expect(created.rate_limit).toBe(rateLimit);
  return created;
}

/** `n` tasks in one batch (one request): their events reach the fan-out together. */
async function createTasks(t: Tenant, n: number): Promise<void> {
  const operations = Array.from({ length: n }, (_, i) => ({ method: "create" as const, body: { title: `paced ${i}` } }));
  const r = await gw().post("/v1/tasks/batch", { operations }, { token: t.apiKey });
  expect(r.status, r.text).toBe(200);
  expect(
    r.body.results.every((x: { status: number }) => x.status === 201),
    r.text,
  ).toBe(true);
}

/** The endpoint's deliveries with their attempts, each attempt's start in epoch ms, in start order. */
async function attemptsOf(h: Hook) {
  return db<{ delivery_id: string; state: string; attempt_count: number; attempt: number; outcome: string; at: number }[]>`
    select d.id as delivery_id, d.state, d.attempt_count, a.attempt, a.outcome, (extract(epoch from a.attempted_at) * 1000)::float8 as at
    from webhooks.deliveries d join webhooks.attempts a on a.delivery_id = d.id
    where d.endpoint_id = ${h.id} order by a.attempted_at`;
}

/** The most starts any one-second window [t, t + 1 s) holds. */
function busiestSecond(starts: readonly number[]): number {
  const sorted = [...starts].sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; j < sorted.length; j++) {
    while ((sorted[j] ?? 0) - (sorted[i] ?? 0) >= 1000) i++;
    most = Math.max(most, j - i + 1);
  }
  return most;
}

describe("webhook rate limits", () => {
  it("when 100 events go to an endpoint limited to 5/s and to an unlimited one, then the limited one gets each once, never over 5 starts in a second, all SUCCEEDED first time, and the other is not held up", async () => {
    const t = await f.tenant("team");
    const limited = await hook(t, 5);
    const free = await hook(t, null);
    await createTasks(t, 100);

    const toFree = await rx.waitFor(free.path, 100, 30_000);
    const toLimited = await rx.waitFor(limited.path, 100, 60_000);
    // The unlimited endpoint had all of its 100 before the limited one had 30.
    expect(
      (toFree[99]?.at ?? Number.POSITIVE_INFINITY) < (toLimited[29]?.at ?? 0),
      `unlimited done at ${toFree[99]?.at}, limited's 30th at ${toLimited[29]?.at}`,
    ).toBe(true);
    // Each event once, each verified with the endpoint's secret.
    expect(new Set(toLimited.map((r) => r.id)).size).toBe(100);
    expect(toLimited.every((r) => r.verifiedBy.length === 1 && r.verifiedBy[0] === 0)).toBe(true);
    // 100 starts at most 5 a second take at least 19 s from the first to the last.
    expect((toLimited[99]?.at ?? 0) - (toLimited[0]?.at ?? 0)).toBeGreaterThanOrEqual(19_000);

    // The limit made no failure: every delivery SUCCEEDED with its one attempt, delivered.
    const attempts = await eventually(
      async () => {
        const rows = await attemptsOf(limited);
        if (rows.length !== 100 || rows.some((r) => r.state !== "SUCCEEDED"))
          throw new Error(`${rows.length} attempts, states ${[...new Set(rows.map((r) => r.state))]}`);
        return rows;
      },
      { timeoutMs: 15_000, what: "100 recorded attempts" },
    );
    expect(new Set(attempts.map((a) => a.delivery_id)).size).toBe(100);
    expect(attempts.every((a) => a.attempt_count === 1 && a.attempt === 1 && a.outcome === "delivered")).toBe(true);
    // Over any one second, from the attempts' own start times, whichever worker made them.
    expect(busiestSecond(attempts.map((a) => a.at))).toBeLessThanOrEqual(5);
    // The unlimited endpoint was not paced at all (far over 5 in its busiest second).
    expect(busiestSecond((await attemptsOf(free)).map((a) => a.at))).toBeGreaterThan(5);
  }, 120_000);

  it("when the limit is lifted with PATCH rate_limit null, then the deliveries still waiting go at once, unpaced", async () => {
    const t = await f.tenant("team");
    const h = await hook(t, 1);
    await createTasks(t, 20);
    await rx.waitFor(h.path, 2, 15_000);
    const patched = unwrap(
      await client(t).PATCH("/v1/webhook-endpoints/{endpoint_id}", { params: { path: { endpoint_id: h.id } }, body: { rate_limit: null } }),
    );
    expect(patched.rate_limit).toBeNull();
    const liftedAt = Date.now();
    // At 1/s the other 18 would take 18 s; they come well within the wait.
    await rx.waitFor(h.path, 20, 15_000);
    const attempts = await eventually(
      async () => {
        const rows = await attemptsOf(h);
        if (rows.length !== 20 || rows.some((r) => r.state !== "SUCCEEDED")) throw new Error(`${rows.length} attempts`);
        return rows;
      },
      { timeoutMs: 15_000, what: "20 recorded attempts" },
    );
    expect(attempts.every((a) => a.attempt_count === 1 && a.outcome === "delivered")).toBe(true);
    // After the PATCH, starts closer than 1 s apart: more than 1 in some second.
    expect(busiestSecond(attempts.filter((a) => a.at >= liftedAt).map((a) => a.at))).toBeGreaterThan(1);
    expect(new Set(rx.received(h.path).map((r) => r.id)).size).toBe(20);
  }, 60_000);

  it("when rate_limit is 0, 10001, 1.5 or a string, then create and PATCH answer 400 naming /rate_limit; 1 and 10000 are taken", async () => {
    const t = await f.tenant("team");
    const h = await hook(t, 10_000);
    for (const value of [0, 10_001, 1.5, "5"]) {
      const created = await gw().post("/v1/webhook-endpoints", { url: rx.url(`/${randomUUID()}`), rate_limit: value }, { token: t.apiKey });
      expect(created.status, created.text).toBe(400);
      expect(created.body.errors, created.text).toEqual([expect.objectContaining({ pointer: "/rate_limit" })]);
      const patched = await gw().patch(`/v1/webhook-endpoints/${h.id}`, { rate_limit: value }, { token: t.apiKey });
      expect(patched.status, patched.text).toBe(400);
      expect(patched.body.errors, patched.text).toEqual([expect.objectContaining({ pointer: "/rate_limit" })]);
    }
    const one = await gw().patch(`/v1/webhook-endpoints/${h.id}`, { rate_limit: 1 }, { token: t.apiKey });
    expect(one.status, one.text).toBe(200);
    expect(one.body.rate_limit).toBe(1);
    const read = await gw().get(`/v1/webhook-endpoints/${h.id}`, { token: t.apiKey });
    expect(read.body.rate_limit, read.text).toBe(1);
  });
});
