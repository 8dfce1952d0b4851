import type { DeliveryJob } from "@tasksvc/contracts";
import { createDb, migrate, newId } from "@tasksvc/db";
import { createLogger } from "@tasksvc/logger";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import type { DeliveryResources } from "../src/domain/delivery-resources.js";
import { dispatchService, type DispatchOptions } from "../src/domain/dispatch.js";
import { deliveriesRepo } from "../src/repo/deliveries-repo.js";
import { MIGRATIONS_DIR } from "../src/service.js";

// The dispatch service against a schema of its own, emptied after each test, so that every pass
// below claims only what its test made. Jobs are "published" into an array.
const stack = inject("stack");
const SCHEMA = "webhooks_dispatch_test";
const log = createLogger({ service: "dispatch-test", level: "silent" });
const db = createDb({ url: stack.databaseUrl, schema: SCHEMA, max: 4 });
const sql = db.sql;
const resources: DeliveryResources = {
  db,
  policy: { retryDelays: [0, 60_000, 60_000], disableAfter: 3, disableMinAgeMs: 0 },
  log,
  now: () => new Date(),
};
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

async function endpoint(): Promise<string> {
  const id = newId("whe");
  await sql`insert into endpoints (id, organization_id, url, secret_sealed) values (${id}, 'org_d', ${`https://hooks.example.com/${id}`}, 'v1.test')`;
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
