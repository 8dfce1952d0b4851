import { type DeliveryJob, type TaskEvent, type WebhookEndpoint, webhookBody } from "@tasksvc/contracts";
import { createDb, migrate, newId } from "@tasksvc/db";
import { createLogger } from "@tasksvc/logger";
import { newSigningSecret } from "@tasksvc/outbound";
import { DEV_SECRET_KEY, secretBox } from "@tasksvc/secrets";
import { apiTask, eventually } from "@tasksvc/testing";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { attemptsService } from "../src/domain/attempts.js";
import { dispatchService } from "../src/domain/dispatch.js";
import { fanOutService } from "../src/domain/fanout.js";
import { webhooksResources } from "../src/domain/resources.js";
import { deliveriesRepo } from "../src/repo/deliveries-repo.js";
import { logRepo } from "../src/repo/log-repo.js";
import { outboxRepo } from "../src/repo/outbox-repo.js";
import { MIGRATIONS_DIR } from "../src/service.js";

// An event's webhook body is stored once, as text, and every attempt, retry and replay signs and
// sends exactly that text; deliveries made before bodies were stored are sent from their own
// payload. On a schema of its own (no dispatcher or worker runs here).
const stack = inject("stack");
const SCHEMA = "webhooks_bodies_test";
const log = createLogger({ service: "bodies-test", level: "silent" });
const db = createDb({ url: stack.databaseUrl, schema: SCHEMA, max: 4 });
const sql = db.sql;
const box = secretBox(DEV_SECRET_KEY, "WEBHOOK_SECRET_KEY");
const resources = webhooksResources(db, { box, policy: { retryDelays: [0, 0, 0], disableAfter: 100, disableMinAgeMs: 0 }, log });
const attempts = attemptsService(resources);
const fanOut = fanOutService(resources);

beforeAll(async () => {
  await migrate({ url: stack.databaseUrl, schema: SCHEMA, dir: MIGRATIONS_DIR, log });
});
afterAll(async () => {
  await sql.unsafe(`drop schema ${SCHEMA} cascade`);
  await db.end({ timeout: 1 });
});

/** An endpoint of `org` created a minute ago, with its secret in plain text. */
async function endpoint(org: string): Promise<{ id: string; secret: string }> {
  const id = newId("whe");
  const secret = newSigningSecret();
  await sql`insert into endpoints (id, organization_id, url, secret_sealed, created_at)
    values (${id}, ${org}, ${`https://hooks.example.com/${id}`}, ${box.seal(secret)}, now() - interval '1 minute')`;
  return { id, secret };
}

/** Claims what is due, starts each claimed attempt of `ids`, and answers the started requests by delivery. */
async function send(ids: readonly string[]) {
  const jobs: DeliveryJob[] = [];
  await dispatchService(resources, { leaseMs: 60_000, endpointConcurrency: 5, batch: 100, expiryEveryMs: 0, publish: async (j) => void jobs.push(j) }).pass();
  const refs = jobs.flatMap((j) => j.deliveries).filter((d) => ids.includes(d.delivery_id));
  const started = await attempts.start(refs);
  return new Map(started.attempts.map((a) => [a.delivery_id, a]));
}

const report = (delivery_id: string, attempt: number, status: number) => ({
  delivery_id,
  attempt,
  attempted_at: new Date().toISOString(),
  result: { outcome: status < 300 ? ("delivered" as const) : ("request_failed" as const), status, error_class: null, duration_ms: 1, retry_after_ms: null },
});

/** An object's keys as jsonb stores them (shorter first, then bytewise), as the event stream carries them. */
const jsonbOrder = <T extends object>(o: T): T => Object.fromEntries(Object.entries(o).sort(([a], [b]) => a.length - b.length || (a < b ? -1 : 1))) as T;

describe("an event's body, stored once", () => {
  it("when an event goes to three endpoints, then its body is stored once and each attempt, retry and replay signs and sends exactly it", async () => {
    const org = newId("org");
    const hooks = [await endpoint(org), await endpoint(org), await endpoint(org)];
    const event: TaskEvent = {
      id: newId("evt"),
      type: "task.updated",
      organization_id: org,
      created_at: new Date().toISOString(),
      data: jsonbOrder(apiTask("stored once", { status: "IN_PROGRESS" })),
      changes: jsonbOrder({ title: { from: "before", to: "stored once" }, status: { from: "TODO", to: "IN_PROGRESS" } }),
    };
    expect(await fanOut.fanOut(event)).toBe(3);
    const stored = await sql<{ body: string; occurred_at: Date }[]>`select body, occurred_at from event_bodies where event_id = ${event.id}`;
    expect(stored).toEqual([{ body: webhookBody(event), occurred_at: new Date(event.created_at) }]);
    const body = stored[0]?.body;
    const deliveries = await sql<
      { id: string; endpoint_id: string; payload: unknown }[]
    >`select id, endpoint_id, payload from deliveries where event_id = ${event.id}`;
    expect(deliveries.map((d) => d.payload)).toEqual([null, null, null]);

    const first = await send(deliveries.map((d) => d.id));
    for (const d of deliveries) {
      const request = first.get(d.id)?.request;
      expect(request?.body, d.id).toBe(body);
      expect(first.get(d.id)?.occurred_at).toBe(event.created_at);
      const secret = hooks.find((h) => h.id === d.endpoint_id)?.secret ?? "";
      expect(new Webhook(secret).verify(request?.body ?? "", request?.headers ?? {})).toEqual(JSON.parse(body ?? ""));
    }

    // A failed call is retried (at once, by this policy), then succeeds; then it is replayed.
    const [one] = deliveries;
    const id = one?.id ?? "";
    await attempts.record([report(id, 1, 500)]);
    expect((await send([id])).get(id)?.request?.body).toBe(body);
    await attempts.record([report(id, 2, 200)]);
    const replay = await logRepo(sql).replay(org, one?.endpoint_id ?? "", id, newId("whd"));
    expect(replay?.state).toBe("PENDING");
    expect((await send([replay?.id ?? ""])).get(replay?.id ?? "")?.request?.body).toBe(body);
    expect(await sql`select 1 from event_bodies where event_id = ${event.id}`).toHaveLength(1);
  });

  it("when an event has no endpoint to go to, then no body is stored; an endpoint's own event never goes to that endpoint", async () => {
    const lonely: TaskEvent = {
      id: newId("evt"),
      type: "task.created",
      organization_id: newId("org"),
      created_at: new Date().toISOString(),
      data: apiTask("alone"),
    };
    expect(await fanOut.fanOut(lonely)).toBe(0);
    expect(await sql`select 1 from event_bodies where event_id = ${lonely.id}`).toHaveLength(0);

    const org = newId("org");
    const described = await endpoint(org);
    const watcher = await endpoint(org);
    await sql`update endpoints set event_types = '{webhook_endpoint.disabled}' where organization_id = ${org}`;
    const data = { id: described.id, url: `https://hooks.example.com/${described.id}` } as WebhookEndpoint;
    const e = { id: newId("evt"), type: "webhook_endpoint.disabled" as const, organization_id: org, created_at: new Date().toISOString(), data };
    expect(await fanOut.fanOut(e)).toBe(1);
    expect(await sql`select endpoint_id from deliveries where event_id = ${e.id}`).toEqual([{ endpoint_id: watcher.id }]);
  });

  it("when a delivery was made before bodies were stored, then it is sent from its own payload, built by the same builder, the same on every attempt", async () => {
    const org = newId("org");
    const hook = await endpoint(org);
    const [id, eventId, at] = [newId("whd"), newId("evt"), "2026-11-23T10:00:00.000Z"];
    const data = jsonbOrder(apiTask("from before"));
    await sql`insert into deliveries (id, organization_id, endpoint_id, event_id, event_type, payload)
      values (${id}, ${org}, ${hook.id}, ${eventId}, 'task.created', ${sql.json({ type: "task.created", timestamp: at, data })})`;
    const expected = webhookBody({ id: eventId, type: "task.created", created_at: at, data });
    const first = (await send([id])).get(id);
    expect(first?.request?.body).toBe(expected);
    expect(first?.occurred_at).toBe(at);
    await attempts.record([report(id, 1, 500)]);
    expect((await send([id])).get(id)?.request?.body).toBe(expected);

    // Neither a body nor a payload (the sweep took the body while a replay was being made): nothing sent.
    const orphan = newId("whd");
    await sql`insert into deliveries (id, organization_id, endpoint_id, event_id, event_type) values (${orphan}, ${org}, ${hook.id}, ${newId("evt")}, 'task.created')`;
    expect((await send([orphan])).get(orphan)?.request).toBeNull();
    expect(await sql`select state from deliveries where id = ${orphan}`).toEqual([{ state: "DISABLED" }]);
  });

  it("when bodies are past the log's retention and a day, then the sweep deletes those no delivery points at, and keeps the rest", async () => {
    const org = newId("org");
    const hook = await endpoint(org);
    const bodies: Array<[string, string, boolean]> = [
      ["old-unreferenced", "32 days", false],
      ["old-referenced", "40 days", true],
      ["recent-unreferenced", "30 days 1 hour", false],
    ];
    for (const [name, age, referenced] of bodies) {
      const eventId = `evt_${name}_${org}`;
      await sql`insert into event_bodies (event_id, organization_id, occurred_at, body) values (${eventId}, ${org}, now() - ${age}::interval, '{}')`;
      if (referenced)
        await sql`insert into deliveries (id, organization_id, endpoint_id, event_id, event_type, state) values (${newId("whd")}, ${org}, ${hook.id}, ${eventId}, 'task.created', 'SUCCEEDED')`;
    }
    expect(await deliveriesRepo(sql).sweepBodies(1)).toBe(1);
    const left = await sql<{ event_id: string }[]>`select event_id from event_bodies where organization_id = ${org} order by event_id`;
    expect(left.map((r) => r.event_id.split("_")[1])).toEqual(["old-referenced", "recent-unreferenced"]);
  });
});

describe("an endpoint event's time", () => {
  it("when the writing transaction began a while before the event is written, then the event carries the transaction's time, its outbox row's own", async () => {
    const org = newId("org");
    const endpoint = { id: newId("whe"), url: "https://hooks.example.com/clock" } as WebhookEndpoint;
    const began = await db.tx(async (t) => {
      const [now] = await t<{ at: string }[]>`select to_char(now() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as at`;
      // The database's clock moves on inside the transaction, its `now()` does not.
      await eventually(async () => (await t<{ past: boolean }[]>`select clock_timestamp() > now() + interval '5 ms' as past`)[0]?.past === true, {
        intervalMs: 1,
      });
      await outboxRepo(t).emit("webhook_endpoint.disabled", [{ organizationId: org, endpoint }]);
      return now?.at;
    });
    const [row] = await sql<{ at: string; same: boolean }[]>`
      select payload->>'created_at' as at, (payload->>'created_at')::timestamptz = date_trunc('milliseconds', created_at) as same
      from outbox where organization_id = ${org}`;
    expect(row).toEqual({ at: began, same: true });
  });
});
