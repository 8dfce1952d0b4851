import { createDb, migrate, newId } from "@tasksvc/db";
import { createLogger } from "@tasksvc/logger";
import { newSigningSecret } from "@tasksvc/outbound";
import { DEV_SECRET_KEY, secretBox } from "@tasksvc/secrets";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { DeliveryJob } from "@tasksvc/contracts";
import { attemptsService } from "../src/domain/attempts.js";
import { dispatchService } from "../src/domain/dispatch.js";
import { webhooksResources } from "../src/domain/resources.js";
import { webhookAttempts } from "@tasksvc/telemetry";
import { MIGRATIONS_DIR } from "../src/service.js";

// The delivery state machine against a schema of its own (no dispatcher or worker runs here), so
// every claim, expiry and report below is this file's doing.
const stack = inject("stack");
const SCHEMA = "webhooks_attempts_test";
const log = createLogger({ service: "attempts-test", level: "silent" });
const db = createDb({ url: stack.databaseUrl, schema: SCHEMA, max: 8 });
const sql = db.sql;
const box = secretBox(DEV_SECRET_KEY, "WEBHOOK_SECRET_KEY");
const resources = webhooksResources(db, { box, policy: { retryDelays: [0, 60_000, 60_000], disableAfter: 3, disableMinAgeMs: 0 }, log });
const svc = attemptsService(resources);

beforeAll(async () => {
  await migrate({ url: stack.databaseUrl, schema: SCHEMA, dir: MIGRATIONS_DIR, log });
});

afterAll(async () => {
  await sql.unsafe(`drop schema ${SCHEMA} cascade`);
  await db.end({ timeout: 1 });
});

async function endpoint(): Promise<string> {
  const id = newId("whe");
  // A URL of its own: an organization has one endpoint per URL.
  await sql`insert into endpoints (id, organization_id, url, secret_sealed) values (${id}, 'org_t', ${`https://hooks.example.com/${id}`}, ${box.seal(newSigningSecret())})`;
  return id;
}

async function pending(endpointId: string, n: number): Promise<string[]> {
  const ids = Array.from({ length: n }, () => newId("whd"));
  for (const id of ids) {
    await sql`insert into deliveries (id, organization_id, endpoint_id, event_id, event_type, payload)
      values (${id}, 'org_t', ${endpointId}, ${newId("evt")}, 'task.created', ${sql.json({ type: "task.created", timestamp: new Date().toISOString(), data: { id: "T-1" } })})`;
  }
  return ids;
}

/** One dispatch pass as the service runs it (the lock, expiries, a claim), answering what it published. */
const pass = async (perEndpoint: number) => {
  const jobs: DeliveryJob[] = [];
  const publish = async (job: DeliveryJob) => void jobs.push(job);
  await dispatchService(resources, { leaseMs: 60_000, endpointConcurrency: perEndpoint, batch: 100, expiryEveryMs: 0, publish }).pass();
  return jobs.flatMap((j) => j.deliveries.map((d) => ({ ...d, endpoint_id: j.endpoint_id })));
};

const noOutcomes = async () => (await webhookAttempts.get()).values.find((v) => v.labels["outcome"] === "no_outcome")?.value ?? 0;
const row = async (id: string) =>
  (
    await sql<{ state: string; attempt_count: number; last_status: number | null }[]>`select state, attempt_count, last_status from deliveries where id = ${id}`
  )[0];
const attemptsOf = (id: string) =>
  sql<{ attempt: number; outcome: string; status: number | null; error_class: string | null }[]>`
    select attempt, outcome, status, error_class from attempts where delivery_id = ${id} order by attempt`;
const result = (status: number | null, outcome: "delivered" | "request_failed" = status !== null && status < 300 ? "delivered" : "request_failed") => ({
  outcome,
  status,
  error_class: status === null ? "ECONNREFUSED" : null,
  duration_ms: 3,
  retry_after_ms: null,
});
const report = (delivery_id: string, attempt: number, status: number | null) => ({
  delivery_id,
  attempt,
  attempted_at: new Date().toISOString(),
  result: result(status),
});

describe("delivery attempts", () => {
  it("when dispatch passes run at once, then an endpoint never has more than its bound in flight", async () => {
    const e = await endpoint();
    await pending(e, 7);
    const claimed = (await Promise.all([pass(2), pass(2), pass(2)])).flat();
    expect(claimed.filter((c) => c.endpoint_id === e)).toHaveLength(2);
    const [inFlight] = await sql<{ n: number }[]>`select count(*)::int as n from deliveries where endpoint_id = ${e} and state = 'DELIVERING'`;
    expect(inFlight?.n).toBe(2);
  });

  it("when a lease runs out, then the attempt counts as no_outcome; a late failure report changes nothing, a late 2xx ends the delivery", async () => {
    const e = await endpoint();
    const [id] = await pending(e, 1);
    const claimed = (await pass(5)).filter((c) => c.delivery_id === id);
    expect(claimed).toEqual([expect.objectContaining({ attempt: 1 })]);
    await sql`update deliveries set lease_until = now() - interval '1 second' where id = ${id ?? ""}`;
    await pass(0);
    expect(await row(id ?? "")).toEqual({ state: "PENDING", attempt_count: 1, last_status: null });
    expect(await attemptsOf(id ?? "")).toEqual([{ attempt: 1, outcome: "no_outcome", status: null, error_class: "lease_expired" }]);

    // The first attempt's worker was slow, not dead: its failure arrives now. Recorded, but the
    // delivery keeps the schedule the expiry gave it.
    await svc.record([report(id ?? "", 1, 500)]);
    expect(await row(id ?? "")).toEqual({ state: "PENDING", attempt_count: 1, last_status: null });
    expect(await attemptsOf(id ?? "")).toEqual([{ attempt: 1, outcome: "request_failed", status: 500, error_class: null }]);
  });

  it("when a 2xx arrives for an attempt already given up, then the delivery is SUCCEEDED and not sent again", async () => {
    const e = await endpoint();
    const [id] = await pending(e, 1);
    await pass(5);
    await sql`update deliveries set lease_until = now() - interval '1 second' where id = ${id ?? ""}`;
    await pass(0);
    await svc.record([report(id ?? "", 1, 200)]);
    expect(await row(id ?? "")).toEqual({ state: "SUCCEEDED", attempt_count: 1, last_status: 200 });
  });

  it("when a worker defers an attempt (past its send window), then the delivery is PENDING and due, its attempt count unchanged, no attempt row; the next pass gives it a new send time", async () => {
    const e = await endpoint();
    await sql`update endpoints set rate_limit = 5 where id = ${e}`;
    const [id, other] = await pending(e, 2);
    const claimed = await pass(5);
    expect(claimed.map((c) => c.delivery_id).sort()).toEqual([id, other].sort());
    const first = claimed.find((c) => c.delivery_id === id);
    expect(first?.send_at).toEqual(expect.any(String));
    // A stale attempt number is not given back: only the current attempt is.
    expect(
      await svc.defer([
        { delivery_id: id ?? "", attempt: 1 },
        { delivery_id: other ?? "", attempt: 2 },
      ]),
    ).toEqual({ deferred: 1 });
    expect(await row(id ?? "")).toEqual({ state: "PENDING", attempt_count: 0, last_status: null });
    expect(await attemptsOf(id ?? "")).toEqual([]);
    const [due] = await sql<
      { due: boolean; leased: boolean }[]
    >`select next_attempt_at <= now() as due, lease_until is not null as leased from deliveries where id = ${id ?? ""}`;
    expect(due).toEqual({ due: true, leased: false });
    expect((await row(other ?? ""))?.state).toBe("DELIVERING");
    // Streaks are untouched: a deferral is not a failure.
    const [streak] = await sql<{ failure_count: number; last_failure_at: Date | null }[]>`select failure_count, last_failure_at from endpoints where id = ${e}`;
    expect(streak).toEqual({ failure_count: 0, last_failure_at: null });
    // As when its next free send time has come within reach (half a second later):
    await sql`update endpoints set rate_next_at = null where id = ${e}`;
    const again = (await pass(5)).find((c) => c.delivery_id === id);
    expect(again).toEqual(expect.objectContaining({ attempt: 1, send_at: expect.any(String) }));
  });

  it("when a job names an attempt that is not the current one, or an endpoint disabled meanwhile, then start signs nothing", async () => {
    const e = await endpoint();
    const [a, b] = await pending(e, 2);
    await pass(5);
    const started = await svc.start([
      { delivery_id: a ?? "", attempt: 1 },
      { delivery_id: a ?? "", attempt: 2 },
      { delivery_id: "whd_gone", attempt: 1 },
    ]);
    expect(started.attempts.map((x) => x.request !== null)).toEqual([true, false, false]);
    expect(started.attempts[0]?.request?.headers["webhook-signature"]).toMatch(/^v1,/);
    await sql`update endpoints set enabled = false where id = ${e}`;
    const refused = await svc.start([{ delivery_id: b ?? "", attempt: 1 }]);
    expect(refused.attempts[0]?.request).toBeNull();
    expect((await row(b ?? ""))?.state).toBe("DISABLED");
  });

  it("when an attempt is started, then a second start while its call window is open signs nothing and says until when; the lease covers the window; once it has passed (that worker died), the attempt is started again", async () => {
    const e = await endpoint();
    const [id] = await pending(e, 1);
    await pass(5);
    const ref = { delivery_id: id ?? "", attempt: 1 };
    const [first] = (await svc.start([{ ...ref, window_ms: 20_000 }])).attempts;
    expect(first?.request).not.toBeNull();
    const [w] = await sql<{ window_s: number; lease_covers: boolean }[]>`
      select round(extract(epoch from call_until - now()))::int as window_s, lease_until >= call_until as lease_covers from deliveries where id = ${id ?? ""}`;
    expect(w).toEqual({ window_s: 20, lease_covers: true });
    // Another worker got the job (the first went silent) and so did this one twice in one batch.
    const again = (await svc.start([{ ...ref, window_ms: 20_000 }])).attempts[0];
    expect(again).toEqual({ ...ref, request: null, busy_until: expect.any(String) });
    expect(Date.parse(again?.busy_until ?? "") - Date.now()).toBeGreaterThan(15_000);
    const twice = (
      await svc.start([
        { ...ref, window_ms: 20_000 },
        { ...ref, window_ms: 20_000 },
      ])
    ).attempts;
    expect(twice.map((a) => a.request)).toEqual([null, null]);
    // The window has passed with no report: the first worker's call is over, whatever became of it
    // (counted as a call with no outcome).
    await sql`update deliveries set call_until = now() - interval '1 millisecond' where id = ${id ?? ""}`;
    const before = await noOutcomes();
    const [made, repeat] = (
      await svc.start([
        { ...ref, window_ms: 20_000 },
        { ...ref, window_ms: 20_000 },
      ])
    ).attempts;
    expect(made?.request?.headers["webhook-id"]).toBe(first?.request?.headers["webhook-id"]);
    expect(repeat).toEqual(expect.objectContaining({ request: null, busy_until: expect.any(String) }));
    expect((await noOutcomes()) - before).toBe(1);
    expect(await row(id ?? "")).toEqual({ state: "DELIVERING", attempt_count: 0, last_status: null });
  });

  it("when an attempt starts, then its body is the stored envelope as it was always serialized, and the event's time comes beside it", async () => {
    const e = await endpoint();
    const [id] = await pending(e, 1);
    await pass(5);
    const [stored] = await sql<{ timestamp: string }[]>`select payload->>'timestamp' as timestamp from deliveries where id = ${id ?? ""}`;
    const [a] = (await svc.start([{ delivery_id: id ?? "", attempt: 1 }])).attempts;
    expect(a?.occurred_at).toBe(stored?.timestamp);
    // Type, time, data in that order, the time as the fan-out stored it: the bytes the signature covers.
    expect(a?.request?.body).toBe(`{"type":"task.created","timestamp":"${stored?.timestamp}","data":{"id":"T-1"}}`);
  });

  it("when failures reach the bound (minimum age 0), then the endpoint is disabled and its PENDING deliveries become DISABLED; a 410 disables at once", async () => {
    const e = await endpoint();
    const ids = await pending(e, 5);
    const claimed = (await pass(3)).filter((c) => c.endpoint_id === e);
    expect(claimed).toHaveLength(3);
    await svc.record(claimed.map((c) => report(c.delivery_id, c.attempt, 503)));
    const [ep] = await sql<
      { enabled: boolean; disabled_reason: string | null; failure_count: number }[]
    >`select enabled, disabled_reason, failure_count from endpoints where id = ${e}`;
    expect(ep).toEqual({ enabled: false, disabled_reason: "consecutive_failures", failure_count: 3 });
    const states = await sql<{ state: string }[]>`select state from deliveries where id = any(${ids}) order by state`;
    expect(states.map((s) => s.state)).toEqual(["DISABLED", "DISABLED", "DISABLED", "DISABLED", "DISABLED"]);

    const gone = await endpoint();
    const [g] = await pending(gone, 1);
    await pass(5);
    await svc.record([report(g ?? "", 1, 410)]);
    const [ge] = await sql<{ enabled: boolean; disabled_reason: string | null }[]>`select enabled, disabled_reason from endpoints where id = ${gone}`;
    expect(ge).toEqual({ enabled: false, disabled_reason: "endpoint_gone" });
  });

  it("when a success follows failures, then the streak ends; a failure after the schedule's last attempt makes the delivery FAILED", async () => {
    const e = await endpoint();
    const [id] = await pending(e, 1);
    for (let attempt = 1; attempt <= 3; attempt++) {
      await sql`update deliveries set next_attempt_at = now() where id = ${id ?? ""} and state = 'PENDING'`;
      const c = (await pass(5)).find((x) => x.delivery_id === id);
      expect(c?.attempt).toBe(attempt);
      // Two failures, then (attempt 3) a failure past the three-attempt schedule.
      await svc.record([report(id ?? "", attempt, attempt === 2 ? null : 500)]);
      if (attempt === 1) await sql`update endpoints set failure_count = 0, failing_since = null where id = ${e}`;
    }
    expect(await row(id ?? "")).toEqual({ state: "FAILED", attempt_count: 3, last_status: 500 });
    const e2 = await endpoint();
    const [ok] = await pending(e2, 1);
    await sql`update endpoints set failure_count = 2, failing_since = now() - interval '1 hour' where id = ${e2}`;
    await pass(5);
    await svc.record([report(ok ?? "", 1, 204)]);
    const [streak] = await sql<
      { failure_count: number; failing_since: Date | null; enabled: boolean }[]
    >`select failure_count, failing_since, enabled from endpoints where id = ${e2}`;
    expect(streak).toEqual({ failure_count: 0, failing_since: null, enabled: true });
  });
});
