import type { DeliveryJob } from "@tasksvc/contracts";
import { createDb, migrate, newId } from "@tasksvc/db";
import { createLogger } from "@tasksvc/logger";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { DEV_SECRET_KEY, secretBox } from "@tasksvc/secrets";
import { dispatchService, RATE_PACING, type DispatchOptions } from "../src/domain/dispatch.js";
import { webhooksResources } from "../src/domain/resources.js";
import { deliveriesRepo } from "../src/repo/deliveries-repo.js";
import { MIGRATIONS_DIR } from "../src/service.js";

// The dispatch service against a schema of its own, emptied after each test, so that every pass
// below claims only what its test made. Jobs are "published" into an array.
const stack = inject("stack");
const SCHEMA = "webhooks_dispatch_test";
const log = createLogger({ service: "dispatch-test", level: "silent" });
const db = createDb({ url: stack.databaseUrl, schema: SCHEMA, max: 4 });
const sql = db.sql;
const resources = webhooksResources(db, {
  box: secretBox(DEV_SECRET_KEY, "WEBHOOK_SECRET_KEY"),
  policy: { retryDelays: [0, 60_000, 60_000], disableAfter: 3, disableMinAgeMs: 0 },
  log,
});
const options = (publish: DispatchOptions["publish"]): DispatchOptions => ({ leaseMs: 60_000, endpointConcurrency: 10, batch: 100, publish });

beforeAll(async () => {
  await migrate({ url: stack.databaseUrl, schema: SCHEMA, dir: MIGRATIONS_DIR, log });
});

afterEach(async () => {
  await sql`delete from endpoints`;
});

afterAll(async () => {
  await sql.unsafe(`drop schema ${SCHEMA} cascade`);
  await db.end({ timeout: 1 });
});

async function endpoint(rateLimit: number | null = null): Promise<string> {
  const id = newId("whe");
  await sql`insert into endpoints (id, organization_id, url, secret_sealed, rate_limit) values (${id}, 'org_d', ${`https://hooks.example.com/${id}`}, 'v1.test', ${rateLimit})`;
  return id;
}

async function pending(endpointId: string, n: number): Promise<string[]> {
  const ids = Array.from({ length: n }, () => newId("whd"));
  for (const id of ids) {
    await sql`insert into deliveries (id, organization_id, endpoint_id, event_id, event_type, payload)
      values (${id}, 'org_d', ${endpointId}, ${newId("evt")}, 'task.created', ${sql.json({ type: "task.created", timestamp: new Date().toISOString(), data: { id: "T-1" } })})`;
  }
  return ids;
}

const row = async (id: string) =>
  (
    await sql<{ state: string; attempt_count: number; leased: boolean; due_in_ms: number | null }[]>`
      select state, attempt_count, lease_until is not null as leased,
        (extract(epoch from next_attempt_at - now()) * 1000)::int as due_in_ms
      from deliveries where id = ${id}`
  )[0];

describe("dispatch", () => {
  it("when a job cannot be published, then its claims are given back, due again in a second, and the published job's stay in flight", async () => {
    const [a, b] = [await endpoint(), await endpoint()];
    const [lost] = await pending(a, 1);
    const [kept] = await pending(b, 1);
    const published: DeliveryJob[] = [];
    const publish = async (job: DeliveryJob) => {
      if (job.endpoint_id === a) throw new Error("the stream is unavailable");
      published.push(job);
    };
    await dispatchService(resources, options(publish)).pass();
    expect(published.map((j) => j.endpoint_id)).toEqual([b]);
    expect(published[0]?.deliveries).toEqual([{ delivery_id: kept, attempt: 1 }]);
    expect(await row(kept ?? "")).toMatchObject({ state: "DELIVERING", attempt_count: 0, leased: true });
    const back = await row(lost ?? "");
    expect(back).toMatchObject({ state: "PENDING", attempt_count: 0, leased: false });
    expect(back?.due_in_ms).toBeGreaterThan(0);
    expect(back?.due_in_ms).toBeLessThanOrEqual(1000);
  });

  it("when a pass claims a full batch, then it answers that more may be due; one that claims less answers not", async () => {
    const e = await endpoint();
    await pending(e, 4);
    const jobs: DeliveryJob[] = [];
    const publish = async (job: DeliveryJob) => void jobs.push(job);
    const d = dispatchService(resources, { ...options(publish), batch: 3 });
    expect(await d.pass()).toBe(true);
    expect(await d.pass()).toBe(false);
    // One job per endpoint and pass, the attempts claimed together in it.
    expect(jobs.map((j) => j.deliveries.length)).toEqual([3, 1]);
  });

  it("when passes come within the expiry interval, then only the first after it counts the leases that ran out", async () => {
    let clock = Date.now();
    const d = dispatchService({ ...resources, now: () => new Date(clock) }, { ...options(async () => {}), expiryEveryMs: 1000 });
    const e = await endpoint();
    const [id] = await pending(e, 1);
    await d.pass();
    await sql`update deliveries set lease_until = now() - interval '1 second' where id = ${id ?? ""}`;
    clock += 999;
    await d.pass();
    expect(await row(id ?? "")).toMatchObject({ state: "DELIVERING", attempt_count: 0 });
    clock += 1;
    await d.pass();
    // Counted as attempt 1 (no outcome) and scheduled by the retry schedule: a minute, ±10%.
    const expired = await row(id ?? "");
    expect(expired).toMatchObject({ state: "PENDING", attempt_count: 1, leased: false });
    expect(expired?.due_in_ms).toBeGreaterThan(50_000);
    const [attempt] = await sql<{ outcome: string; error_class: string }[]>`select outcome, error_class from attempts where delivery_id = ${id ?? ""}`;
    expect(attempt).toEqual({ outcome: "no_outcome", error_class: "lease_expired" });
  });

  it("when deliveries are due, waiting for a retry and in flight, then the backlog counts each", async () => {
    const e = await endpoint();
    const [, later, inFlight] = await pending(e, 3);
    await sql`update deliveries set next_attempt_at = now() + interval '1 hour' where id = ${later ?? ""}`;
    await sql`update deliveries set state = 'DELIVERING', next_attempt_at = null, lease_until = now() + interval '1 minute' where id = ${inFlight ?? ""}`;
    expect(await deliveriesRepo(sql).backlog()).toEqual({ due: 1, later: 1, delivering: 1 });
  });
});

// Rate limits (DESIGN.md 11): send times handed out by the claim, under the dispatch lock.
describe("dispatch with rate limits", () => {
  /** The database's clock, in epoch milliseconds: send times are made on it. */
  const dbNow = async () => (await sql<{ ms: number }[]>`select (extract(epoch from clock_timestamp()) * 1000)::float8 as ms`)[0]?.ms ?? Number.NaN;
  const rateNextAt = async (id: string) =>
    (await sql<{ ms: number | null }[]>`select (extract(epoch from rate_next_at) * 1000)::float8 as ms from endpoints where id = ${id}`)[0]?.ms ?? null;
  const states = async (id: string) =>
    Object.fromEntries(
      (await sql<{ state: string; n: number }[]>`select state, count(*)::int as n from deliveries where endpoint_id = ${id} group by state`).map((r) => [
        r.state,
        r.n,
      ]),
    );
  const collect = () => {
    const jobs: DeliveryJob[] = [];
    return { jobs, publish: async (job: DeliveryJob) => void jobs.push(job) };
  };
  const sendTimes = (jobs: readonly DeliveryJob[], endpointId: string) =>
    jobs
      .filter((j) => j.endpoint_id === endpointId)
      .flatMap((j) => j.deliveries.map((d) => Date.parse(d.send_at ?? "")))
      .sort((a, b) => a - b);
  const gaps = (times: readonly number[]) => times.slice(1).map((t, i) => t - (times[i] ?? Number.NaN));

  it("when an endpoint has a rate limit, then a pass hands out send times (1 s + tolerance) / rate apart, from the lead on, within the horizon; the rest stay PENDING", async () => {
    const e = await endpoint(5);
    await pending(e, 20);
    const { jobs, publish } = collect();
    const before = await dbNow();
    await dispatchService(resources, options(publish)).pass();
    const after = await dbNow();
    expect(jobs.map((j) => j.endpoint_id)).toEqual([e]);
    expect(jobs[0]?.send_window_ms).toBe(RATE_PACING.toleranceMs);
    // 1050 ms / 5 = 210 ms apart; the first 100 ms (the lead) ahead; 100, 310, 520, 730 and 940
    // ms are within the 1 s horizon, 1150 ms is not.
    const times = sendTimes(jobs, e);
    expect(times).toHaveLength(5);
    expect(gaps(times)).toEqual([210, 210, 210, 210]);
    expect(times[0]).toBeGreaterThanOrEqual(before + RATE_PACING.leadMs);
    expect(times[0]).toBeLessThanOrEqual(after + RATE_PACING.leadMs + 1);
    expect(await states(e)).toEqual({ DELIVERING: 5, PENDING: 15 });
    // The next free send time is one spacing past the last one handed out (to the microsecond; send times go out rounded up to the ms).
    const next = (await rateNextAt(e)) ?? Number.NaN;
    expect(next).toBeGreaterThan((times[4] ?? 0) + 209);
    expect(next).toBeLessThanOrEqual((times[4] ?? 0) + 210);
    // Each lease runs from its send time; the job's is the earliest of them.
    const leases = await sql<{ lease_ms: number }[]>`
      select (extract(epoch from lease_until) * 1000)::float8 as lease_ms from deliveries where endpoint_id = ${e} and state = 'DELIVERING' order by lease_until`;
    expect(leases.map((l) => Math.ceil(l.lease_ms) - 60_000)).toEqual(times);
    expect(Date.parse(jobs[0]?.lease_until ?? "")).toBe(Math.floor(leases[0]?.lease_ms ?? 0));
  });

  it("when passes follow each other, then the send times go on from rate_next_at at the same spacing, and an endpoint gets more only once its next one is within the refill distance", async () => {
    const e = await endpoint(5);
    await pending(e, 30);
    const { jobs, publish } = collect();
    const d = dispatchService(resources, options(publish));
    await d.pass();
    const first = sendTimes(jobs, e);
    expect(first).toHaveLength(5);
    // Its next free time is about 1.05 s ahead, beyond the 500 ms refill distance: nothing now.
    await d.pass();
    expect(jobs).toHaveLength(1);
    // A dispatcher that refills at any distance (and looks 3 s ahead) goes on where the last left off.
    const wide = dispatchService(resources, { ...options(publish), pacing: { refillMs: 3000, horizonMs: 3000 } });
    await wide.pass();
    expect(jobs).toHaveLength(2);
    const all = sendTimes(jobs, e);
    expect(all.length).toBeGreaterThan(first.length);
    expect(gaps(all).every((g) => g === 210)).toBe(true);
    expect(all[0]).toBe(first[0]);
  });

  it("when two dispatchers (two pools, as two replicas) pass at once, then the send times of one endpoint are all distinct and never closer than the spacing", async () => {
    const e = await endpoint(50);
    await pending(e, 120);
    const other = createDb({ url: stack.databaseUrl, schema: SCHEMA, max: 4 });
    try {
      const { jobs, publish } = collect();
      // Horizon and refill of 10 s: each pass may take the whole backlog, so only the lock and
      // rate_next_at keep them apart. Batches of 25: several passes each.
      const opts = { ...options(publish), batch: 25, endpointConcurrency: 1000, pacing: { refillMs: 10_000, horizonMs: 10_000 } };
      const a = dispatchService(resources, opts);
      const b = dispatchService({ ...resources, db: other }, opts);
      await Promise.all([...Array.from({ length: 4 }, () => a.pass()), ...Array.from({ length: 4 }, () => b.pass())]);
      const times = sendTimes(jobs, e);
      expect(times).toHaveLength(120);
      // 1050 ms / 50 = 21 ms: exact, since every send time is the first plus a whole number of spacings.
      expect(new Set(gaps(times))).toEqual(new Set([21]));
      const next = (await rateNextAt(e)) ?? Number.NaN;
      expect(next).toBeGreaterThan((times.at(-1) ?? 0) + 20);
    } finally {
      await other.end({ timeout: 1 });
    }
  });

  it("when a limited endpoint's concurrency is taken, then it gets send times for its free slots only, and rate_next_at moves past those alone", async () => {
    const e = await endpoint(1000);
    await pending(e, 10);
    const { jobs, publish } = collect();
    const d = dispatchService(resources, { ...options(publish), endpointConcurrency: 3, pacing: { refillMs: 1000 } });
    await d.pass();
    const times = sendTimes(jobs, e);
    expect(times).toHaveLength(3);
    // 1.05 ms apart, rounded up to whole milliseconds.
    expect(gaps(times).every((g) => g >= 1 && g <= 2)).toBe(true);
    const next = (await rateNextAt(e)) ?? Number.NaN;
    expect(next).toBeLessThanOrEqual((times[2] ?? 0) + 1.05);
    expect(next).toBeGreaterThan((times[2] ?? 0) - 1 + 1.05);
    await d.pass();
    expect(jobs).toHaveLength(1);
    expect(await states(e)).toEqual({ DELIVERING: 3, PENDING: 7 });
  });

  it("when endpoints without a limit are claimed beside a limited one, then theirs carry no send time, their lease runs from now, and nothing of theirs changes", async () => {
    const free = await endpoint();
    const limited = await endpoint(5);
    await pending(free, 12);
    await pending(limited, 12);
    const { jobs, publish } = collect();
    const before = await dbNow();
    await dispatchService(resources, options(publish)).pass();
    const job = jobs.find((j) => j.endpoint_id === free);
    // The endpoint bound (10) as before, no send times, no window.
    expect(job?.deliveries).toHaveLength(10);
    expect(job?.deliveries.every((x) => Object.keys(x).sort().join() === "attempt,delivery_id")).toBe(true);
    expect(job && "send_window_ms" in job).toBe(false);
    expect(Date.parse(job?.lease_until ?? "")).toBeGreaterThanOrEqual(before + 60_000 - 1000);
    expect(Date.parse(job?.lease_until ?? "")).toBeLessThanOrEqual((await dbNow()) + 60_000);
    expect(await rateNextAt(free)).toBeNull();
    expect(sendTimes(jobs, limited)).toHaveLength(5);
  });

  it("when a report holds a limited endpoint's row, then the pass gives it no send times (never sends it unpaced) and the others go on; the next pass does", async () => {
    const limited = await endpoint(5);
    const free = await endpoint();
    await pending(limited, 3);
    await pending(free, 3);
    const { jobs, publish } = collect();
    const d = dispatchService(resources, options(publish));
    // A pool of its own: this one lends one connection to transactions, and the pass needs it.
    const reporter = createDb({ url: stack.databaseUrl, schema: SCHEMA, max: 2 });
    try {
      await reporter.tx(async (t) => {
        // What recordAttempts holds while it writes an endpoint's streak.
        await t`select id from endpoints where id = ${limited} for no key update`;
        await d.pass();
      });
    } finally {
      await reporter.end({ timeout: 1 });
    }
    expect(jobs.map((j) => j.endpoint_id)).toEqual([free]);
    expect(await states(limited)).toEqual({ PENDING: 3 });
    await d.pass();
    expect(sendTimes(jobs, limited)).toHaveLength(3);
  });

  it("when the limit is lifted, then the next pass claims the backlog at once, without send times", async () => {
    const e = await endpoint(1);
    await pending(e, 6);
    const { jobs, publish } = collect();
    const d = dispatchService(resources, options(publish));
    await d.pass();
    expect(sendTimes(jobs, e)).toHaveLength(1);
    await sql`update endpoints set rate_limit = null where id = ${e}`;
    await d.pass();
    expect(jobs[1]?.deliveries).toHaveLength(5);
    expect(jobs[1]?.deliveries.every((x) => x.send_at === undefined)).toBe(true);
  });
});
