import { type Task, type TaskEvent, type TaskEventType, webhookBody } from "@tasksvc/contracts";
import { createDb, migrate, newId } from "@tasksvc/db";
import { createLogger } from "@tasksvc/logger";
import { apiTask } from "@tasksvc/testing";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { fanOutService } from "../src/domain/fanout.js";
import { deliveriesRepo } from "../src/repo/deliveries-repo.js";
import { endpointsRepo } from "../src/repo/endpoints-repo.js";
import { MIGRATIONS_DIR } from "../src/service.js";

// The fan-out against a schema of its own (the stack's webhooks service consumes into
// `webhooks`), so that no consumer races these calls and each count is this file's doing.
const stack = inject("stack");
const SCHEMA = "webhooks_fanout_test";
const log = createLogger({ service: "fanout-test", level: "silent" });
const db = createDb({ url: stack.databaseUrl, schema: SCHEMA, max: 6 });
const sql = db.sql;
const endpoints = endpointsRepo(sql);
const svc = fanOutService({ db });

beforeAll(async () => {
  await migrate({ url: stack.databaseUrl, schema: SCHEMA, dir: MIGRATIONS_DIR, log });
});

afterAll(async () => {
  await sql.unsafe(`drop schema ${SCHEMA} cascade`);
  await db.end({ timeout: 1 });
});

const task: Task = apiTask("fanned out");

const org = () => newId("org");
// Each at a URL of its own: an organization has one endpoint per URL.
const endpoint = async (organizationId: string, eventTypes: TaskEventType[] = []) => {
  const id = newId("whe");
  const made = await endpoints.insert(
    { id, organizationId, url: `https://hooks.example.com/${id}`, eventTypes, rateLimit: null, secretSealed: "v1.test" },
    100,
  );
  if (!("endpoint" in made)) throw new Error("the endpoint was not made");
  return made.endpoint;
};
const event = (organizationId: string, type: TaskEventType = "task.created", createdAt = new Date().toISOString()): TaskEvent => ({
  id: newId("evt"),
  type,
  organization_id: organizationId,
  created_at: createdAt,
  data: task,
});
// Each row with its event's body, stored once for the event (the row's own payload stays empty).
const rowsOf = (eventId: string) =>
  sql<{ id: string; endpoint_id: string; state: string; attempt_count: number; payload: unknown; body: string | null }[]>`
    select d.id, d.endpoint_id, d.state, d.attempt_count, d.payload, b.body
    from deliveries d left join event_bodies b on b.event_id = d.event_id where d.event_id = ${eventId} order by d.endpoint_id`;

describe("fan-out of a task event into deliveries", () => {
  it("when an event is fanned out, then one PENDING row per enabled subscribed endpoint of its organization, with the envelope", async () => {
    const o = org();
    const all = await endpoint(o);
    const created = await endpoint(o, ["task.created"]);
    const updatedOnly = await endpoint(o, ["task.updated"]);
    const off = await endpoint(o);
    await endpoints.update(o, off.id, { enabled: false });
    const elsewhere = await endpoint(org());
    const e = event(o);

    expect(await svc.fanOut(e)).toBe(2);
    const rows = await rowsOf(e.id);
    expect(rows.map((r) => r.endpoint_id).sort()).toEqual([all.id, created.id].sort());
    for (const r of rows) {
      expect(r).toMatchObject({ id: expect.stringMatching(/^whd_/), state: "PENDING", attempt_count: 0 });
      expect(JSON.parse(r.body ?? "null")).toEqual({ type: "task.created", timestamp: e.created_at, data: task });
      expect(r.body).toBe(webhookBody(e));
      expect(r.payload).toBeNull();
    }
    expect(rows.map((r) => r.endpoint_id)).not.toContain(updatedOnly.id);
    expect(rows.map((r) => r.endpoint_id)).not.toContain(elsewhere.id);
  });

  it("when the same event is fanned out again, and five times at once, then still one row per endpoint", async () => {
    const o = org();
    await endpoint(o);
    await endpoint(o);
    const e = event(o);
    expect(await svc.fanOut(e)).toBe(2);
    expect(await svc.fanOut(e)).toBe(0);
    const made = await Promise.all(Array.from({ length: 5 }, () => svc.fanOut(e)));
    expect(made).toEqual([0, 0, 0, 0, 0]);
    expect(await rowsOf(e.id)).toHaveLength(2);

    // Concurrent first handlings (two replicas): the unique key keeps one row each.
    const e2 = event(o);
    const first = await Promise.all(Array.from({ length: 5 }, () => svc.fanOut(e2)));
    expect(first.reduce((a, b) => a + b, 0)).toBe(2);
    expect(await rowsOf(e2.id)).toHaveLength(2);
  });

  it("when an endpoint is created after the event occurred, then it gets no row, even if the event is handled later", async () => {
    const o = org();
    const occurred = new Date(Date.now() - 60_000).toISOString();
    const older = await endpoint(o);
    await sql`update endpoints set created_at = ${occurred}::timestamptz - interval '1 second' where id = ${older.id}`;
    await endpoint(o);
    const e = event(o, "task.updated", occurred);
    expect(await svc.fanOut(e)).toBe(1);
    expect((await rowsOf(e.id)).map((r) => r.endpoint_id)).toEqual([older.id]);
  });

  it("when events of many organizations arrive at once, then one batch gives each event exactly its own endpoints' rows and its own count", async () => {
    const orgs = Array.from({ length: 6 }, () => org());
    const counts = [0, 1, 3, 0, 2, 1];
    for (const [i, o] of orgs.entries()) for (let k = 0; k < (counts[i] ?? 0); k++) await endpoint(o, k === 2 ? ["task.archived"] : []);
    const events = orgs.flatMap((o) => [event(o, "task.created"), event(o, "task.archived")]);
    const made = await Promise.all(events.map((e) => svc.fanOut(e)));
    const expected = orgs.flatMap((_, i) => [Math.min(counts[i] ?? 0, 2), counts[i] ?? 0]);
    expect(made).toEqual(expected);
    for (const [i, e] of events.entries()) expect(await rowsOf(e.id), e.type).toHaveLength(expected[i] ?? -1);
    // Again, all at once: nothing new.
    expect(await Promise.all(events.map((e) => svc.fanOut(e)))).toEqual(events.map(() => 0));
  });

  it("when a batch's events have more endpoints than the first try's ids, then a second try fills in every row", async () => {
    const o = org();
    for (let k = 0; k < 40; k++) await endpoint(o);
    const events = [event(o), event(o)];
    expect(await Promise.all(events.map((e) => svc.fanOut(e)))).toEqual([40, 40]);
    for (const e of events) expect(new Set((await rowsOf(e.id)).map((r) => r.endpoint_id)).size).toBe(40);
  });

  it("when an organization has no endpoint, then its events skip the fan-out statement, and an endpoint made later receives the next one", async () => {
    const repo = deliveriesRepo(sql);
    const carried: string[][] = [];
    const counted = fanOutService(
      { db },
      {
        ...repo,
        fanOut: (events, id) => {
          carried.push(events.map((e) => e.eventId));
          return repo.fanOut(events, id);
        },
      },
    );
    const lone = org();
    const served = org();
    await endpoint(served);
    const [a, b] = [event(lone), event(served)];
    expect(await Promise.all([counted.fanOut(a), counted.fanOut(b)])).toEqual([0, 1]);
    expect(carried).toEqual([[b.id]]);
    expect(await counted.fanOut(event(lone))).toBe(0);
    expect(carried).toHaveLength(1);

    // "None" is never remembered: the endpoint (as if made on another replica) gets the next event.
    await endpoint(lone);
    const next = event(lone);
    expect(await counted.fanOut(next)).toBe(1);
    expect(carried.at(-1)).toEqual([next.id]);
    expect(await rowsOf(next.id)).toHaveLength(1);
  });

  it("when a remembered organization's endpoints are all deleted, then its events make no delivery", async () => {
    const o = org();
    const ep = await endpoint(o);
    expect(await svc.fanOut(event(o))).toBe(1);
    await endpoints.remove(o, ep.id);
    const e = event(o);
    expect(await svc.fanOut(e)).toBe(0);
    expect(await rowsOf(e.id)).toHaveLength(0);
  });

  it("when an endpoint is deleted, then its deliveries go with it", async () => {
    const o = org();
    const ep = await endpoint(o);
    const e = event(o);
    await svc.fanOut(e);
    expect(await rowsOf(e.id)).toHaveLength(1);
    await endpoints.remove(o, ep.id);
    expect(await rowsOf(e.id)).toHaveLength(0);
  });
});
