import { callerOf, type DeliveryJob, type WebhookEndpointStats } from "@tasksvc/contracts";
import { createDb, migrate, newId } from "@tasksvc/db";
import { createLogger } from "@tasksvc/logger";
import { newSigningSecret } from "@tasksvc/outbound";
import { DEV_SECRET_KEY, secretBox } from "@tasksvc/secrets";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { attemptsService } from "../src/domain/attempts.js";
import { deliveryStatsService } from "../src/domain/delivery-stats.js";
import { dispatchService } from "../src/domain/dispatch.js";
import { type WebhooksResources, webhooksResources } from "../src/domain/resources.js";
import { deliveriesRepo, type FanOutEvent } from "../src/repo/deliveries-repo.js";
import { endpointsRepo } from "../src/repo/endpoints-repo.js";
import { logRepo } from "../src/repo/log-repo.js";
import { MIGRATIONS_DIR } from "../src/service.js";
import { expectNear, minutes, task, windows } from "./stats-values.js";

// The delivery statistics against a schema of their own, driven through the real delivery
// machinery (fan-out, dispatch passes, reports, lease expiry, disables, replays, sweeps, deletes),
// and compared after each step with a count made independently from the deliveries and attempts
// tables, for windows that start inside a minute, on boundaries, days back and out of range.
const stack = inject("stack");
const SCHEMA = "webhooks_stats_test";
const log = createLogger({ service: "stats-test", level: "silent" });
const db = createDb({ url: stack.databaseUrl, schema: SCHEMA, max: 8 });
const sql = db.sql;
const box = secretBox(DEV_SECRET_KEY, "WEBHOOK_SECRET_KEY");
const ORG = newId("org");
const caller = (org: string) =>
  callerOf({ request_id: "stats-test", organization_id: org, user_id: "usr_stats", credential_id: "key_stats", scopes: [], plan: "pro" });

// Three attempts, retries due at once; the streak never disables, except under `strict`.
const lenient = webhooksResources(db, { box, policy: { retryDelays: [0, 0, 0], disableAfter: 1000, disableMinAgeMs: 0 }, log });
const strict: WebhooksResources = { ...lenient, policy: { ...lenient.policy, disableAfter: 3 } };
const attempts = attemptsService(lenient);
const strictAttempts = attemptsService(strict);
const stats = deliveryStatsService(lenient);

beforeAll(async () => {
  await migrate({ url: stack.databaseUrl, schema: SCHEMA, dir: MIGRATIONS_DIR, log });
});

afterAll(async () => {
  await sql.unsafe(`drop schema ${SCHEMA} cascade`);
  await db.end({ timeout: 1 });
});

async function endpoint(): Promise<string> {
  const id = newId("whe");
  const made = await endpointsRepo(sql).insert(
    { id, organizationId: ORG, url: `https://hooks.example.com/${id}`, eventTypes: [], rateLimit: null, secretSealed: box.seal(newSigningSecret()) },
    100,
  );
  if (!("endpoint" in made)) throw new Error("the endpoint was not made");
  return id;
}

/** `n` task events through the fan-out: one PENDING delivery per enabled endpoint each. Answers the events. */
async function fanOut(n: number): Promise<FanOutEvent[]> {
  const at = new Date().toISOString();
  const events = Array.from({ length: n }, () => ({
    eventId: newId("evt"),
    eventType: "task.created" as const,
    organizationId: ORG,
    occurredAt: at,
    body: JSON.stringify({ type: "task.created", timestamp: at, data: task }),
    aboutEndpoint: null,
    traceparent: null,
  }));
  await deliveriesRepo(sql).fanOut(events, () => newId("whd"));
  return events;
}

interface Claim {
  delivery_id: string;
  attempt: number;
  endpoint_id: string;
}

/** One dispatch pass as the service runs it (expiries, then claims); a job of `unpublished` fails to publish. */
async function pass(unpublished?: string): Promise<Claim[]> {
  const jobs: DeliveryJob[] = [];
  const publish = async (job: DeliveryJob) => {
    if (job.endpoint_id === unpublished) throw new Error("the job stream is away");
    jobs.push(job);
  };
  await dispatchService(lenient, { leaseMs: 60_000, endpointConcurrency: 1000, batch: 1000, expiryEveryMs: 0, publish }).pass();
  return jobs.flatMap((j) => j.deliveries.map((d) => ({ ...d, endpoint_id: j.endpoint_id })));
}

const DURATIONS = [3, 17, 42, 99, 100, 101, 150, 870, 2300, 15_000];
let reported = 0;
const report = (c: Pick<Claim, "delivery_id" | "attempt">, status: number) => ({
  delivery_id: c.delivery_id,
  attempt: c.attempt,
  attempted_at: new Date().toISOString(),
  result: {
    outcome: status < 300 ? ("delivered" as const) : ("request_failed" as const),
    status,
    error_class: null,
    duration_ms: DURATIONS[reported++ % DURATIONS.length] ?? 1,
    retry_after_ms: null,
  },
});

/** What the stats must say, counted from the rows: deliveries by state, attempt rows, exact nearest-rank percentiles. */
async function counted(endpointId: string, since: string) {
  const [d] = await sql<Record<string, number>[]>`
    select count(*) filter (where state = 'PENDING')::int as pending, count(*) filter (where state = 'DELIVERING')::int as delivering,
           count(*) filter (where state = 'SUCCEEDED')::int as succeeded, count(*) filter (where state = 'FAILED')::int as failed,
           count(*) filter (where state = 'DISABLED')::int as disabled
    from deliveries where endpoint_id = ${endpointId} and created_at >= ${since}::timestamptz`;
  const [a] = await sql<{ total: number; failed: number; p50: number | null; p99: number | null }[]>`
    select count(*)::int as total, count(*) filter (where a.outcome <> 'delivered')::int as failed,
           percentile_disc(0.5) within group (order by a.duration_ms) as p50, percentile_disc(0.99) within group (order by a.duration_ms) as p99
    from attempts a join deliveries d on d.id = a.delivery_id
    where d.endpoint_id = ${endpointId} and d.created_at >= ${since}::timestamptz`;
  return { deliveries: d, attempts: { total: a?.total, failed: a?.failed }, latency: { p50: a?.p50 ?? null, p99: a?.p99 ?? null } };
}

/** A whole minute two hours back, with deliveries 5, 25, 45 and 65 s into it (set in the test). */
let edge = 0;

async function expectExact(endpointId: string, step: string): Promise<void> {
  for (const since of windows(edge)) {
    const got: WebhookEndpointStats = await stats.endpointStats(caller(ORG), endpointId, since);
    if (since !== undefined && Date.parse(since) > Date.now() - 29 * minutes(24 * 60)) expect(got.since, step).toBe(since);
    const want = await counted(endpointId, got.since);
    const what = `${step}, since ${since ?? "(default)"} → ${got.since}: ${JSON.stringify(got)} against ${JSON.stringify(want)}`;
    expect(got.deliveries, what).toEqual(want.deliveries);
    expect(got.attempts, what).toEqual(want.attempts);
    expectNear(got.latency_ms.p50, want.latency.p50, `${what} p50`);
    expectNear(got.latency_ms.p99, want.latency.p99, `${what} p99`);
  }
}

const state = async (id: string) => (await sql<{ state: string }[]>`select state from deliveries where id = ${id}`)[0]?.state;
const deltasOf = async (endpointId: string) =>
  (await sql<{ n: number }[]>`select count(*)::int as n from delivery_stat_deltas where endpoint_id = ${endpointId}`)[0]?.n;

describe("delivery stats", () => {
  it("when latency bins stand for durations, then exactly up to 100 ms and within 2.6% up to the last bin", async () => {
    const off = await sql<{ ms: number; v: number }[]>`
      select ms, stats_latency_value(stats_latency_bin(ms)) as v from generate_series(0, 62660) ms
      where case when ms <= 100 then stats_latency_value(stats_latency_bin(ms)) <> ms
                 else abs(stats_latency_value(stats_latency_bin(ms)) - ms) > 0.026 * ms end
      limit 5`;
    expect(off).toEqual([]);
    const [top] = await sql<{ bins: number }[]>`select count(distinct stats_latency_bin(ms))::int as bins from generate_series(0, 100000) ms`;
    expect(top?.bins).toBe(233);
    expect(await sql`select stats_latency_bin(null) as bin`).toEqual([{ bin: null }]);
  });

  it("when deliveries go through every path of the machinery, then the stats equal the rows' own count at every step, before and after compaction", async () => {
    const a = await endpoint();
    const b = await endpoint();
    const c = await endpoint();
    const d = await endpoint();

    // History over three days, inserted as an operator's SQL or a migration would: 44 PENDING due
    // now (4 of them in one minute two hours back), 12 SUCCEEDED with their attempt; and 5
    // finished 40 days ago, which the sweep deletes.
    await sql`
      insert into deliveries (id, organization_id, endpoint_id, event_id, event_type, payload, created_at)
      select 'whd_hist_' || i, ${ORG}, ${a}, 'evt_hist_' || i, 'task.created', '{}'::jsonb, now() - i * interval '1 hour 47 minutes 13.123 seconds'
      from generate_series(1, 40) i`;
    const [at] = await sql<{ edge: Date }[]>`select stats_bucket(now() - interval '2 hours', 1) as edge`;
    edge = at?.edge.getTime() ?? 0;
    await sql`
      insert into deliveries (id, organization_id, endpoint_id, event_id, event_type, payload, created_at)
      select 'whd_edge_' || s, ${ORG}, ${a}, 'evt_edge_' || s, 'task.created', '{}'::jsonb, ${at?.edge ?? null}::timestamptz + s * interval '1 second'
      from unnest(array[5, 25, 45, 65]) s`;
    await sql`
      insert into deliveries (id, organization_id, endpoint_id, event_id, event_type, payload, state, attempt_count, created_at)
      select 'whd_done_' || i, ${ORG}, ${a}, 'evt_done_' || i, 'task.created', '{}'::jsonb, 'SUCCEEDED', 1, now() - i * interval '5 hours 31 minutes 7 seconds'
      from generate_series(1, 12) i`;
    await sql`
      insert into deliveries (id, organization_id, endpoint_id, event_id, event_type, payload, state, attempt_count, created_at)
      select 'whd_old_' || i, ${ORG}, ${a}, 'evt_old_' || i, 'task.created', '{}'::jsonb, 'SUCCEEDED', 1, now() - interval '40 days' - i * interval '1 hour'
      from generate_series(1, 5) i`;
    await sql`
      insert into attempts (delivery_id, attempt, attempted_at, outcome, status, duration_ms)
      select id, 1, created_at, 'delivered', 200, 20 + length(id) * 7 from deliveries where id like 'whd_done_%' or id like 'whd_old_%'`;
    const events = await fanOut(12);
    // The same events again (a redelivery): the fan-out's key makes them no-ops, counted as none.
    expect(await deliveriesRepo(sql).fanOut(events, () => newId("whd"))).toEqual(events.map(() => 0));
    await expectExact(a, "history and fan-out");

    // Pass 1 claims everything due; C's job cannot be published, so its claims are given back.
    const first = await pass(c);
    expect(first.filter((x) => x.endpoint_id === a)).toHaveLength(56);
    expect(first.filter((x) => x.endpoint_id === c)).toHaveLength(0);
    await fanOut(5);

    // A: each delivery follows one of six plans (by the order it was first claimed in).
    const plans = new Map<string, number>();
    const planOf = (id: string) => {
      if (!plans.has(id)) plans.set(id, plans.size % 6);
      return plans.get(id) ?? 0;
    };
    // Attempt by attempt: ok, fail, or none (the worker never reports; the lease runs out).
    const PLANS: Array<Array<"ok" | "fail" | "none">> = [
      ["ok"],
      ["fail", "fail", "ok"],
      ["fail", "fail", "fail"],
      ["none", "ok"],
      ["none", "fail"],
      ["none", "ok"],
    ];
    const runA = async (claims: Claim[]) => {
      const mine = claims.filter((x) => x.endpoint_id === a);
      // Late reports of attempts whose lease ran out, while attempt 2 is in flight: plan 3's
      // first call failed after all (its no_outcome placeholder becomes a failure, the delivery
      // goes on); plan 4's got a 2xx (the delivery is SUCCEEDED at once, and attempt 2's failure
      // then changes nothing but its own row). Plan 5's placeholder stays.
      const late3 = mine.filter((x) => planOf(x.delivery_id) === 3 && x.attempt === 2).map((x) => report({ ...x, attempt: 1 }, 500));
      const late4 = mine.filter((x) => planOf(x.delivery_id) === 4 && x.attempt === 2);
      if (late3.length > 0) await attempts.record(late3);
      if (late4.length > 0) {
        await attempts.record(late4.map((x) => report({ ...x, attempt: 1 }, 204)));
        expect(await state(late4[0]?.delivery_id ?? "")).toBe("SUCCEEDED");
      }
      const now = mine.flatMap((x) => {
        const step = PLANS[planOf(x.delivery_id)]?.[x.attempt - 1] ?? "ok";
        return step === "none" ? [] : [report(x, step === "ok" ? 200 : 500)];
      });
      if (now.length > 0) await attempts.record(now);
      return mine.length;
    };
    await runA(first);
    await expectExact(a, "pass 1 reported");

    // B: three failures under the strict policy disable it: its new PENDING deliveries become
    // DISABLED; of its attempts still in flight, three never start (DISABLED at start), three end
    // in a 2xx (SUCCEEDED) and three fail (DISABLED, no retry).
    const ofB = first.filter((x) => x.endpoint_id === b);
    expect(ofB).toHaveLength(12);
    await strictAttempts.record(ofB.slice(0, 3).map((x) => report(x, 500)));
    expect((await sql`select enabled from endpoints where id = ${b}`)[0]?.["enabled"]).toBe(false);
    const started = await strictAttempts.start(ofB.slice(3, 6));
    expect(started.attempts.every((x) => x.request === null)).toBe(true);
    await strictAttempts.record(ofB.slice(6, 9).map((x) => report(x, 200)));
    await strictAttempts.record(ofB.slice(9, 12).map((x) => report(x, 503)));
    await expectExact(b, "endpoint disabled by its failures");

    // C: disabled by hand, its queued deliveries with it.
    await endpointsRepo(sql).update(ORG, c, { enabled: false });
    await expectExact(c, "endpoint disabled by hand");

    // D: all delivered, and the same reports again (a redelivered batch changes nothing); deleted
    // later, with rows in the rollup and deltas.
    const ofD = first.filter((x) => x.endpoint_id === d).map((x) => report(x, 200));
    await attempts.record(ofD);
    await attempts.record(ofD);
    await expectExact(d, "reports twice");

    // Compaction midway, and a window read on each side of it.
    expect(await stats.compact()).toBeGreaterThan(0);
    expect(await deltasOf(a)).toBe(0);
    await expectExact(a, "after compaction");
    await fanOut(2);

    // Leases of the unreported attempts run out; the next passes count them (no_outcome) and
    // dispatch every retry until none is due.
    for (let round = 2; round <= 5; round++) {
      await sql`update deliveries set lease_until = now() - interval '1 second' where endpoint_id = ${a} and state = 'DELIVERING'`;
      const claims = await pass();
      await attempts.record(claims.filter((x) => x.endpoint_id === d).map((x) => report(x, 200)));
      await runA(claims);
      await expectExact(a, `pass ${round}`);
    }
    const [noOutcome] = await sql<{ n: number }[]>`
      select count(*)::int as n from attempts t join deliveries x on x.id = t.delivery_id where x.endpoint_id = ${a} and t.outcome = 'no_outcome'`;
    expect(noOutcome?.n).toBeGreaterThan(0);
    const [failedAttempts] = await sql<{ n: number }[]>`
      select count(*)::int as n from attempts t join deliveries x on x.id = t.delivery_id where x.endpoint_id = ${a} and t.outcome <> 'delivered'`;
    expect(failedAttempts?.n).toBeGreaterThan(0);

    // Replays: one by hand, then every failed event since three days ago; then a pass leaves
    // them in flight (DELIVERING, counted live) and two more events wait (PENDING).
    const [failedOne] = await sql<{ id: string }[]>`select id from deliveries where endpoint_id = ${a} and state = 'FAILED' limit 1`;
    expect(failedOne).toBeDefined();
    await logRepo(sql).replay(ORG, a, failedOne?.id ?? "", newId("whd"));
    const replayed = await logRepo(sql).replayFailed(
      ORG,
      a,
      new Date(Date.now() - 3 * minutes(24 * 60)).toISOString(),
      Array.from({ length: 100 }, () => newId("whd")),
    );
    expect(replayed).toBeGreaterThan(0);
    await expectExact(a, "replays queued");
    await stats.compact();
    const inFlight = (await pass()).filter((x) => x.endpoint_id === a);
    expect(inFlight.length).toBeGreaterThan(0);
    await fanOut(2);
    await expectExact(a, "replays in flight");

    // The sweep deletes the deliveries 40 days old and adds no delta; the rollup's sweep takes
    // the rows no window reaches.
    const deltasBefore = (await sql<{ n: number }[]>`select count(*)::int as n from delivery_stat_deltas`)[0]?.n;
    expect(await deliveriesRepo(sql).sweep()).toBe(5);
    expect((await sql<{ n: number }[]>`select count(*)::int as n from delivery_stat_deltas`)[0]?.n).toBe(deltasBefore);
    await stats.compact();
    expect(await stats.sweep()).toBeGreaterThanOrEqual(11);
    const [oldRows] = await sql<{ n: number }[]>`select count(*)::int as n from delivery_stats where bucket < now() - interval '30 days'`;
    expect(oldRows?.n).toBe(0);
    await expectExact(a, "after the sweeps");

    // Deleting D takes its statistics along, adding no delta to anyone.
    await fanOut(1);
    expect(await deltasOf(d)).toBeGreaterThan(0);
    const othersBefore = (await sql<{ n: number }[]>`select count(*)::int as n from delivery_stat_deltas where endpoint_id <> ${d}`)[0]?.n;
    expect(await endpointsRepo(sql).remove(ORG, d)).toBe(true);
    expect(await sql`select 1 from delivery_stat_deltas where endpoint_id = ${d} union all select 1 from delivery_stats where endpoint_id = ${d}`).toEqual([]);
    expect((await sql<{ n: number }[]>`select count(*)::int as n from delivery_stat_deltas where endpoint_id <> ${d}`)[0]?.n).toBe(othersBefore);
    await expect(stats.endpointStats(caller(ORG), d, undefined)).rejects.toMatchObject({ code: "resource_not_found" });
    await expect(stats.endpointStats(caller(newId("org")), a, undefined)).rejects.toMatchObject({ code: "resource_not_found" });

    // Every level of the rollup holds the same all-time sums, and they are the rows' own.
    await stats.compact();
    for (const e of [a, b, c]) {
      const levels = await sql<{ width: number; sums: string }[]>`
        select width, concat_ws(',', sum(created), sum(succeeded), sum(failed), sum(disabled), sum(attempts), sum(attempts_failed),
                                stats_hist_sum(latency)) as sums
        from delivery_stats where endpoint_id = ${e} group by width order by width`;
      expect(levels.map((l) => l.width)).toEqual([1, 60, 1440]);
      expect(new Set(levels.map((l) => l.sums)).size, JSON.stringify(levels)).toBe(1);
      const [rows] = await sql<{ sums: string }[]>`
        select concat_ws(',', (select count(*) from deliveries where endpoint_id = ${e}),
          (select count(*) from deliveries where endpoint_id = ${e} and state = 'SUCCEEDED'),
          (select count(*) from deliveries where endpoint_id = ${e} and state = 'FAILED'),
          (select count(*) from deliveries where endpoint_id = ${e} and state = 'DISABLED'),
          (select count(*) from attempts t join deliveries x on x.id = t.delivery_id where x.endpoint_id = ${e}),
          (select count(*) from attempts t join deliveries x on x.id = t.delivery_id where x.endpoint_id = ${e} and t.outcome <> 'delivered'),
          (select stats_hist_of(array_agg(stats_latency_bin(t.duration_ms)), array_agg(1))
           from attempts t join deliveries x on x.id = t.delivery_id where x.endpoint_id = ${e} and t.duration_ms is not null)) as sums`;
      // All time, not a window: A's deliveries 40 days old left the rows and the rollup alike.
      expect(levels[0]?.sums, e).toBe(rows?.sums);
      await expectExact(e, `end, ${e === a ? "A" : e === b ? "B" : "C"}`);
    }
  });

  it("when compactions on two replicas, endpoint deletes and the writers run at once, then nothing is lost or counted twice and no statement deadlocks", async () => {
    const live = [await endpoint(), await endpoint()];
    // Endpoints of another organization (the fan-out never targets them), each with deltas to
    // move while it is deleted: a delete either waits for the compaction or is left out by it.
    const other = newId("org");
    const doomed: string[] = [];
    for (let i = 0; i < 6; i++) {
      const id = newId("whe");
      await endpointsRepo(sql).insert(
        { id, organizationId: other, url: `https://hooks.example.com/${id}`, eventTypes: [], rateLimit: null, secretSealed: "v1.test" },
        100,
      );
      await sql`
        insert into deliveries (id, organization_id, endpoint_id, event_id, event_type, payload, state)
        select ${id} || '_' || i, ${other}, ${id}, 'evt_' || i, 'task.created', '{}'::jsonb, 'SUCCEEDED' from generate_series(1, 50) i`;
      doomed.push(id);
    }
    const writer = async () => {
      for (let i = 0; i < 6; i++) {
        await fanOut(4);
        const mine = (await pass()).filter((x) => live.includes(x.endpoint_id));
        if (mine.length > 0) await attempts.record(mine.map((x, k) => report(x, k % 3 === 0 ? 500 : 200)));
      }
    };
    const compactions = async () => {
      for (let i = 0; i < 10; i++) await Promise.all([stats.compact(), stats.compact()]);
    };
    const deletes = async () => {
      for (const id of doomed) expect(await endpointsRepo(sql).remove(other, id)).toBe(true);
    };
    await Promise.all([writer(), writer(), compactions(), deletes()]);
    await stats.compact();
    expect(
      await sql`select 1 from delivery_stat_deltas where endpoint_id = any(${doomed}) union all select 1 from delivery_stats where endpoint_id = any(${doomed})`,
    ).toEqual([]);
    for (const e of live) {
      expect(await deltasOf(e)).toBe(0);
      await expectExact(e, "after the race");
    }
  });
});
