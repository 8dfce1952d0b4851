import { randomBytes } from "node:crypto";
import { createClient, unwrap } from "@tasksvc/client";
import { e2eContext, type Tenant, gatewayUrl } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";

// The webhook-endpoint operations beyond CRUD (spec 3.3, 3.4, 4.1; DESIGN.md 4): rotation, the
// probes (test event, verify), the delivery log and replays. Delivery rows are written directly:
// these tests are about the log and its replays, not about how deliveries come to be. Endpoints
// that hold rows are disabled first, so the dispatcher (which only claims PENDING rows of enabled
// endpoints) never races the assertions.
const { stack, gw, gw2, f, db } = e2eContext();
// Fixtures go through the typed client (@tasksvc/client); the operations under test use raw HTTP.
const client = (t: Tenant) => createClient({ baseUrl: gatewayUrl(stack), token: t.apiKey, retries: 0 });

// A URL of its own by default: an organization has one endpoint per URL.
const create = async (t: Tenant, url = `https://hooks.example.com/ops/${randomBytes(6).toString("hex")}`) =>
  unwrap(await client(t).POST("/v1/webhook-endpoints", { body: { url } }));

/**
 * An endpoint at a URL the egress guard refuses. The API refuses such a URL when it is set, so it
 * is written in place, as when a name's addresses change after the endpoint was made.
 */
const blockedEndpoint = async (t: Tenant, url: string) => {
  const e = await create(t);
  await db`update webhooks.endpoints set url = ${url} where id = ${e.id}`;
  return e;
};

/** An endpoint disabled through the API: its rows stay where the test puts them. */
const disabledEndpoint = async (t: Tenant) => {
  const e = await create(t);
  unwrap(await client(t).PATCH("/v1/webhook-endpoints/{endpoint_id}", { params: { path: { endpoint_id: e.id } }, body: { enabled: false } }));
  return e;
};

type State = "PENDING" | "DELIVERING" | "SUCCEEDED" | "FAILED" | "DISABLED";

interface RowSpec {
  state: State;
  eventId?: string;
  createdAt?: string;
  attemptCount?: number;
  lastStatus?: number | null;
  nextAttemptAt?: string | null;
  replayOf?: string | null;
}

const rid = (prefix: string) => `${prefix}_${randomBytes(9).toString("hex")}`;

async function insertDelivery(t: Tenant, endpointId: string, s: RowSpec) {
  const id = rid("whd");
  const eventId = s.eventId ?? rid("evt");
  const payload = { type: "task.created", timestamp: "2026-11-23T10:00:00.000Z", data: { id: "T-1" } };
  await db`
    insert into webhooks.deliveries (id, organization_id, endpoint_id, event_id, event_type, payload, state, attempt_count, last_status, next_attempt_at, created_at, replay_of)
    values (${id}, ${t.organizationId}, ${endpointId}, ${eventId}, 'task.created', ${db.json(payload)}, ${s.state}, ${s.attemptCount ?? 0},
      ${s.lastStatus ?? null}, ${s.nextAttemptAt === undefined ? new Date().toISOString() : s.nextAttemptAt},
      ${s.createdAt ?? new Date().toISOString()}, ${s.replayOf ?? null})`;
  return { id, eventId };
}

const deliveryRows = (endpointId: string) =>
  db<{ id: string; event_id: string; state: State; attempt_count: number; replay_of: string | null; payload: unknown }[]>`
    select id, event_id, state, attempt_count, replay_of, payload from webhooks.deliveries where endpoint_id = ${endpointId} order by created_at, id`;

const minutesAgo = (m: number) => new Date(Date.now() - m * 60_000).toISOString();

describe("rotate-secret", () => {
  const secrets = (id: string) =>
    db<{ secret_sealed: string; previous_secret_sealed: string | null; previous_secret_expires_at: Date | null }[]>`
      select secret_sealed, previous_secret_sealed, previous_secret_expires_at from webhooks.endpoints where id = ${id}`.then((r) => r[0]);

  it("when rotated, then 200 with a new secret shown once and the old one kept sealed for about 24 h", async () => {
    const t = await f.tenant();
    const e = await create(t);
    const before = await secrets(e.id);
    const r = await gw.post(`/v1/webhook-endpoints/${e.id}/rotate-secret`, undefined, { token: t.apiKey });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ id: e.id, enabled: true, secret: expect.stringMatching(/^whsec_/) });
    expect(r.body.secret).not.toBe(e.secret);
    const expires = Date.parse(r.body.previous_secret_expires_at);
    expect(Math.abs(expires - (Date.now() + 24 * 3600_000)), r.text).toBeLessThan(60_000);
    const after = await secrets(e.id);
    expect(after?.previous_secret_sealed).toBe(before?.secret_sealed);
    expect(after?.secret_sealed).not.toBe(before?.secret_sealed);
    expect(after?.previous_secret_expires_at?.toISOString()).toBe(r.body.previous_secret_expires_at);
    const got = await gw.get(`/v1/webhook-endpoints/${e.id}`, { token: t.apiKey });
    expect(got.text).not.toContain(r.body.secret);
    expect(got.body).not.toHaveProperty("previous_secret_expires_at");
    const records = await db`select result::text as result from webhooks.idempotency`;
    expect(records.map((x) => String(x["result"])).join("\n")).not.toContain(r.body.secret);
  });

  it("when replayed with the same Idempotency-Key, then the same new secret and the endpoint rotated once", async () => {
    const t = await f.tenant();
    const e = await create(t);
    const original = await secrets(e.id);
    const path = `/v1/webhook-endpoints/${e.id}/rotate-secret`;
    const headers = { "idempotency-key": "rotate-1" };
    const first = await gw.post(path, undefined, { token: t.apiKey, headers });
    expect(first.status, first.text).toBe(200);
    const again = await gw2.post(path, undefined, { token: t.apiKey, headers });
    expect(again.status, again.text).toBe(200);
    expect(again.body).toEqual(first.body);
    const after = await secrets(e.id);
    // Rotated once: the slot holds the ORIGINAL secret, not the first rotation's.
    expect(after?.previous_secret_sealed).toBe(original?.secret_sealed);
    // The service's own record (the gateway's is a fast path) stores the secret sealed only.
    const records = await db`select result::text as result from webhooks.idempotency where key = 'rotate-1'`;
    expect(records).toHaveLength(1);
    expect(String(records[0]?.["result"])).not.toContain(first.body.secret);
  });

  it("when rotated twice, then the first previous secret is dropped (one slot)", async () => {
    const t = await f.tenant();
    const e = await create(t);
    const original = await secrets(e.id);
    const path = `/v1/webhook-endpoints/${e.id}/rotate-secret`;
    const one = await gw.post(path, undefined, { token: t.apiKey });
    const afterOne = await secrets(e.id);
    const two = await gw.post(path, undefined, { token: t.apiKey });
    expect([one.status, two.status], two.text).toEqual([200, 200]);
    expect(two.body.secret).not.toBe(one.body.secret);
    const afterTwo = await secrets(e.id);
    expect(afterTwo?.previous_secret_sealed).toBe(afterOne?.secret_sealed);
    expect(afterTwo?.previous_secret_sealed).not.toBe(original?.secret_sealed);
    expect(afterTwo?.secret_sealed).not.toBe(afterOne?.secret_sealed);
  });

  it("when the endpoint is unknown or another organization's, then 404 and nothing rotates", async () => {
    const owner = await f.tenant();
    const other = await f.tenant();
    const e = await create(owner);
    const before = await secrets(e.id);
    for (const [token, id] of [
      [other.apiKey, e.id],
      [owner.apiKey, "whe_unknown"],
    ] as const) {
      const r = await gw.post(`/v1/webhook-endpoints/${id}/rotate-secret`, undefined, { token });
      expect(r.status, r.text).toBe(404);
      expect(r.body.code).toBe("resource_not_found");
    }
    expect(await secrets(e.id)).toEqual(before);
  });
});

describe("test event and verify", () => {
  // The stack's defaults refuse private targets (DESIGN.md 5): each of these must be blocked by
  // the delivery service's egress guard before any connection, answered without `status`, even
  // when it became the endpoint's URL after the checks made when a URL is set.
  const BLOCKED = [
    "https://127.0.0.1/hook",
    "https://10.0.0.1/",
    "https://169.254.169.254/",
    "https://[::1]/",
    "https://100.64.0.1/",
    "https://[::ffff:127.0.0.1]/",
    "https://224.0.0.1/",
    "https://0.0.0.0/",
    "https://172.16.0.1/",
    "https://192.168.1.1/",
    "https://[fd00:ec2::254]/",
    "https://[64:ff9b::a9fe:a9fe]/",
  ];

  it("when the test event targets a private, loopback, metadata or special address, then 200 blocked without status and no delivery row", async () => {
    const t = await f.tenant();
    for (const url of BLOCKED) {
      const e = await blockedEndpoint(t, url);
      const r = await gw.post(`/v1/webhook-endpoints/${e.id}/test-event`, { event_type: "task.updated" }, { token: t.apiKey });
      expect(r.status, `${url} → ${r.text}`).toBe(200);
      expect(r.body, `${url} → ${r.text}`).toEqual({ outcome: "blocked", duration_ms: expect.any(Number) });
      expect(await deliveryRows(e.id), url).toEqual([]);
    }
    // Twelve probes in a row, each through three processes: a busy machine's share, not a bound.
  }, 90_000);

  // "No body" is a POST without Content-Type (content-length 0). An empty body labelled
  // application/json stays the gateway-wide 400 (problems.ts), like on every other operation.
  it("when the test event has no body, an empty object or an event type, then each is accepted; a bad type is 400", async () => {
    const t = await f.tenant();
    const e = await blockedEndpoint(t, "https://10.1.2.3/");
    const path = `/v1/webhook-endpoints/${e.id}/test-event`;
    for (const r of [
      await gw.post(path, undefined, { token: t.apiKey }),
      await gw.post(path, {}, { token: t.apiKey }),
      await gw.post(path, { event_type: "task.archived" }, { token: t.apiKey }),
    ]) {
      expect(r.status, r.text).toBe(200);
      expect(r.body.outcome).toBe("blocked");
    }
    for (const body of [{ event_type: "task.erased" }, { event_type: "task.created", extra: 1 }]) {
      const r = await gw.post(path, body, { token: t.apiKey });
      expect(r.status, r.text).toBe(400);
      expect(r.body.code).toBe("validation_failed");
    }
    expect(await deliveryRows(e.id)).toEqual([]);
  });

  it("when verify is blocked, then 200 with verified false and the endpoint stays unverified", async () => {
    const t = await f.tenant();
    const e = await blockedEndpoint(t, "https://169.254.169.254/latest/meta-data/");
    const r = await gw.post(`/v1/webhook-endpoints/${e.id}/verify`, undefined, { token: t.apiKey });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toEqual({ outcome: "blocked", duration_ms: expect.any(Number), verified: false });
    const got = await gw.get(`/v1/webhook-endpoints/${e.id}`, { token: t.apiKey });
    expect(got.body.verified).toBe(false);
    expect(await deliveryRows(e.id)).toEqual([]);
  });

  it("when a verified endpoint's probe fails, then verified stays true", async () => {
    const t = await f.tenant();
    const e = await blockedEndpoint(t, "https://192.168.0.10/");
    await db`update webhooks.endpoints set verified = true where id = ${e.id}`;
    const r = await gw.post(`/v1/webhook-endpoints/${e.id}/verify`, undefined, { token: t.apiKey });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ outcome: "blocked", verified: true });
  });

  it("when another organization probes the endpoint, then 404", async () => {
    const owner = await f.tenant();
    const other = await f.tenant();
    const e = await blockedEndpoint(owner, "https://10.0.0.9/");
    for (const op of ["test-event", "verify"]) {
      const r = await gw.post(`/v1/webhook-endpoints/${e.id}/${op}`, undefined, { token: other.apiKey });
      expect(r.status, `${op} → ${r.text}`).toBe(404);
      expect(r.body.code).toBe("resource_not_found");
    }
  });
});

describe("delivery log", () => {
  it("when listed, then newest first in the 2.9 shape, next_attempt_at only while PENDING, paged, and filtered by state", async () => {
    const t = await f.tenant();
    const e = await disabledEndpoint(t);
    const future = new Date(Date.now() + 3600_000).toISOString();
    const failed = await insertDelivery(t, e.id, { state: "FAILED", createdAt: minutesAgo(30), attemptCount: 8, lastStatus: 500, nextAttemptAt: future });
    const succeeded = await insertDelivery(t, e.id, { state: "SUCCEEDED", createdAt: minutesAgo(20), attemptCount: 1, lastStatus: 200 });
    const pending = await insertDelivery(t, e.id, { state: "PENDING", createdAt: minutesAgo(10), attemptCount: 2, lastStatus: 503, nextAttemptAt: future });
    const path = `/v1/webhook-endpoints/${e.id}/deliveries`;
    const all = await gw.get(path, { token: t.apiKey });
    expect(all.status, all.text).toBe(200);
    expect(
      all.body.data.map((d: { id: string }) => d.id),
      all.text,
    ).toEqual([pending.id, succeeded.id, failed.id]);
    expect(all.body.data[0]).toEqual({
      id: pending.id,
      event_id: pending.eventId,
      event_type: "task.created",
      state: "PENDING",
      attempt_count: 2,
      last_status: 503,
      next_attempt_at: future,
      created_at: expect.any(String),
    });
    expect(all.body.data[2]).toMatchObject({ state: "FAILED", attempt_count: 8, last_status: 500, next_attempt_at: null });
    expect(all.text).not.toContain("payload");

    const page1 = await gw.get(`${path}?limit=2`, { token: t.apiKey });
    expect(page1.body.has_more, page1.text).toBe(true);
    const page2 = await gw.get(`${path}?limit=2&after=${encodeURIComponent(page1.body.next_cursor)}`, { token: t.apiKey });
    expect(page2.status, page2.text).toBe(200);
    expect(page2.body.data.map((d: { id: string }) => d.id)).toEqual([failed.id]);
    expect(page2.body.has_more).toBe(false);

    const onlyFailed = await gw.get(`${path}?state=FAILED`, { token: t.apiKey });
    expect(
      onlyFailed.body.data.map((d: { id: string }) => d.id),
      onlyFailed.text,
    ).toEqual([failed.id]);
    const reused = await gw.get(`${path}?limit=2&state=FAILED&after=${encodeURIComponent(page1.body.next_cursor)}`, { token: t.apiKey });
    expect(reused.status, reused.text).toBe(400);
    const bad = await gw.get(`${path}?state=LOST`, { token: t.apiKey });
    expect(bad.status, bad.text).toBe(400);
    expect(bad.body.code).toBe("validation_failed");
  });

  it("when another organization lists the deliveries, or the endpoint is unknown, then 404", async () => {
    const owner = await f.tenant();
    const other = await f.tenant();
    const e = await disabledEndpoint(owner);
    await insertDelivery(owner, e.id, { state: "FAILED" });
    for (const [token, id] of [
      [other.apiKey, e.id],
      [owner.apiKey, "whe_unknown"],
    ] as const) {
      const r = await gw.get(`/v1/webhook-endpoints/${id}/deliveries`, { token });
      expect(r.status, r.text).toBe(404);
      expect(r.body.code).toBe("resource_not_found");
    }
  });

  it("when a delivery's attempts are listed, then in attempt order, paged, and 404 through another endpoint", async () => {
    const t = await f.tenant();
    const e = await disabledEndpoint(t);
    const otherEndpoint = await disabledEndpoint(t);
    const d = await insertDelivery(t, e.id, { state: "FAILED", attemptCount: 3, lastStatus: 500 });
    const secondsAgo = (n: number) => new Date(Date.now() - n * 1000).toISOString();
    const at1 = secondsAgo(30);
    const at2 = secondsAgo(20);
    const at3 = secondsAgo(10);
    await db`
      insert into webhooks.attempts (delivery_id, attempt, attempted_at, outcome, status, error_class, duration_ms) values
        (${d.id}, 2, ${at2}, 'request_failed', 500, null, 120),
        (${d.id}, 1, ${at1}, 'timeout', null, 'timeout', 15000),
        (${d.id}, 3, ${at3}, 'no_outcome', null, null, null)`;
    const path = `/v1/webhook-endpoints/${e.id}/deliveries/${d.id}/attempts`;
    const all = await gw.get(path, { token: t.apiKey });
    expect(all.status, all.text).toBe(200);
    expect(all.body).toEqual({
      data: [
        { attempt: 1, attempted_at: at1, outcome: "timeout", status: null, error_class: "timeout", duration_ms: 15000 },
        { attempt: 2, attempted_at: at2, outcome: "request_failed", status: 500, error_class: null, duration_ms: 120 },
        { attempt: 3, attempted_at: at3, outcome: "no_outcome", status: null, error_class: null, duration_ms: null },
      ],
      has_more: false,
      next_cursor: null,
    });
    const page1 = await gw.get(`${path}?limit=2`, { token: t.apiKey });
    expect(
      page1.body.data.map((a: { attempt: number }) => a.attempt),
      page1.text,
    ).toEqual([1, 2]);
    const page2 = await gw.get(`${path}?limit=2&after=${encodeURIComponent(page1.body.next_cursor)}`, { token: t.apiKey });
    expect(
      page2.body.data.map((a: { attempt: number }) => a.attempt),
      page2.text,
    ).toEqual([3]);

    const other = await f.tenant();
    for (const [token, p] of [
      [t.apiKey, `/v1/webhook-endpoints/${otherEndpoint.id}/deliveries/${d.id}/attempts`],
      [t.apiKey, `/v1/webhook-endpoints/${e.id}/deliveries/whd_unknown/attempts`],
      [other.apiKey, path],
    ] as const) {
      const r = await gw.get(p, { token });
      expect(r.status, `${p} → ${r.text}`).toBe(404);
      expect(r.body.code).toBe("resource_not_found");
    }
  });
});

describe("replay", () => {
  const replay = (t: Tenant, endpointId: string, deliveryId: string, api = gw) =>
    api.post(`/v1/webhook-endpoints/${endpointId}/deliveries/${deliveryId}/replay`, undefined, { token: t.apiKey });

  it("when a FAILED delivery is replayed, then 202 with a NEW PENDING row for the same event, the original unchanged", async () => {
    const t = await f.tenant();
    const e = await disabledEndpoint(t);
    const original = await insertDelivery(t, e.id, { state: "FAILED", attemptCount: 8, lastStatus: 500, nextAttemptAt: null, createdAt: minutesAgo(5) });
    const [before] = await deliveryRows(e.id);
    const r = await replay(t, e.id, original.id);
    expect(r.status, r.text).toBe(202);
    expect(r.body).toEqual({
      id: expect.stringMatching(/^whd_/),
      event_id: original.eventId,
      event_type: "task.created",
      state: "PENDING",
      attempt_count: 0,
      last_status: null,
      next_attempt_at: expect.any(String),
      created_at: expect.any(String),
    });
    expect(r.body.id).not.toBe(original.id);
    expect(Math.abs(Date.parse(r.body.next_attempt_at) - Date.now())).toBeLessThan(60_000);
    const rows = await deliveryRows(e.id);
    expect(rows).toHaveLength(2);
    expect(rows[0]).toEqual(before);
    expect(rows[1]).toMatchObject({ id: r.body.id, event_id: original.eventId, replay_of: original.id, state: "PENDING", payload: before?.payload });
    const [org] = await db`select organization_id from webhooks.deliveries where id = ${r.body.id}`;
    expect(org?.["organization_id"]).toBe(t.organizationId);
    // Replays never re-enable the endpoint (spec 3.4).
    expect((await gw.get(`/v1/webhook-endpoints/${e.id}`, { token: t.apiKey })).body.enabled).toBe(false);
  });

  it("when the event already has a PENDING or DELIVERING delivery, then 409 delivery_already_pending and nothing is created", async () => {
    const t = await f.tenant();
    const e = await disabledEndpoint(t);
    const succeeded = await insertDelivery(t, e.id, { state: "SUCCEEDED", createdAt: minutesAgo(5) });
    const pending = await insertDelivery(t, e.id, { state: "PENDING", eventId: succeeded.eventId, replayOf: succeeded.id });
    const delivering = await insertDelivery(t, e.id, { state: "DELIVERING", createdAt: minutesAgo(4) });
    for (const id of [succeeded.id, pending.id, delivering.id]) {
      const r = await replay(t, e.id, id);
      expect(r.status, `${id} → ${r.text}`).toBe(409);
      expect(r.body.code).toBe("delivery_already_pending");
    }
    expect(await deliveryRows(e.id)).toHaveLength(3);
  });

  it("when ten replays of the same delivery race, then exactly one 202, the others 409, and one new row", async () => {
    const t = await f.tenant();
    const e = await disabledEndpoint(t);
    const failed = await insertDelivery(t, e.id, { state: "FAILED", createdAt: minutesAgo(5) });
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => replay(t, e.id, failed.id, i % 2 === 0 ? gw : gw2)));
    const statuses = results.map((r) => r.status).sort();
    expect(statuses, results.map((r) => r.text).join("\n")).toEqual([202, ...Array(9).fill(409)]);
    expect(results.filter((r) => r.status === 409).every((r) => r.body.code === "delivery_already_pending")).toBe(true);
    const rows = await deliveryRows(e.id);
    expect(rows.filter((r) => r.replay_of === failed.id)).toHaveLength(1);
  });

  it("when the delivery is unknown, of another endpoint, or another organization's, then 404", async () => {
    const owner = await f.tenant();
    const other = await f.tenant();
    const e = await disabledEndpoint(owner);
    const second = await disabledEndpoint(owner);
    const d = await insertDelivery(owner, e.id, { state: "FAILED" });
    for (const [t, endpointId, deliveryId] of [
      [owner, e.id, "whd_unknown"],
      [owner, second.id, d.id],
      [other, e.id, d.id],
    ] as const) {
      const r = await replay(t, endpointId, deliveryId);
      expect(r.status, r.text).toBe(404);
      expect(r.body.code).toBe("resource_not_found");
    }
    expect(await deliveryRows(e.id)).toHaveLength(1);
    expect(await deliveryRows(second.id)).toHaveLength(0);
  });
});

describe("replay-failed", () => {
  const replayFailed = (t: Tenant, endpointId: string, since: string) =>
    gw.post(`/v1/webhook-endpoints/${endpointId}/replay-failed`, { since }, { token: t.apiKey });

  it("when called, then each event whose latest delivery since `since` is FAILED or DISABLED gets one new PENDING row, once", async () => {
    const t = await f.tenant();
    const e = await disabledEndpoint(t);
    const since = minutesAgo(60);
    const tooOld = await insertDelivery(t, e.id, { state: "FAILED", createdAt: minutesAgo(90) });
    const failed = await insertDelivery(t, e.id, { state: "FAILED", createdAt: minutesAgo(50) });
    const disabled = await insertDelivery(t, e.id, { state: "DISABLED", createdAt: minutesAgo(40), nextAttemptAt: null });
    await insertDelivery(t, e.id, { state: "SUCCEEDED", createdAt: minutesAgo(30) });
    // An event that failed, was replayed, and failed again: replayed once, from its latest row.
    const twice = await insertDelivery(t, e.id, { state: "FAILED", createdAt: minutesAgo(20) });
    const twiceAgain = await insertDelivery(t, e.id, { state: "FAILED", eventId: twice.eventId, createdAt: minutesAgo(15), replayOf: twice.id });
    // An event that failed and was since replayed successfully: nothing to do.
    const healed = await insertDelivery(t, e.id, { state: "FAILED", createdAt: minutesAgo(12) });
    await insertDelivery(t, e.id, { state: "SUCCEEDED", eventId: healed.eventId, createdAt: minutesAgo(11), replayOf: healed.id });
    // An event with a live delivery: skipped.
    const live = await insertDelivery(t, e.id, { state: "FAILED", createdAt: minutesAgo(10) });
    await insertDelivery(t, e.id, { state: "PENDING", eventId: live.eventId, createdAt: minutesAgo(9), replayOf: live.id });

    const r = await replayFailed(t, e.id, since);
    expect(r.status, r.text).toBe(202);
    expect(r.body).toEqual({ replayed_count: 3 });
    const rows = await deliveryRows(e.id);
    const made = rows.filter((x) => x.state === "PENDING" && x.attempt_count === 0 && x.replay_of !== null && x.replay_of !== live.id);
    expect(made.map((x) => x.replay_of).sort()).toEqual([failed.id, disabled.id, twiceAgain.id].sort());
    expect(made.map((x) => x.event_id).sort()).toEqual([failed.eventId, disabled.eventId, twice.eventId].sort());
    expect(rows.find((x) => x.id === tooOld.id)?.state).toBe("FAILED");

    const again = await replayFailed(t, e.id, since);
    expect(again.body, again.text).toEqual({ replayed_count: 0 });
    expect(await deliveryRows(e.id)).toHaveLength(rows.length);
    expect((await gw.get(`/v1/webhook-endpoints/${e.id}`, { token: t.apiKey })).body.enabled).toBe(false);
  });

  it("when more than 1000 events failed, then 1000 per call, oldest first, and the next call with the same since takes the rest", async () => {
    const t = await f.tenant();
    const e = await disabledEndpoint(t);
    await db`
      insert into webhooks.deliveries (id, organization_id, endpoint_id, event_id, event_type, payload, state, next_attempt_at, created_at)
      select 'whd_bulk_' || n, ${t.organizationId}, ${e.id}, 'evt_bulk_' || n, 'task.created', '{}'::jsonb, 'FAILED', null,
             now() - interval '1 hour' + n * interval '1 millisecond'
      from generate_series(1, 1005) as n`;
    const since = minutesAgo(120);
    const first = await replayFailed(t, e.id, since);
    expect(first.status, first.text).toBe(202);
    expect(first.body).toEqual({ replayed_count: 1000 });
    const [oldestLeft] = await db`
      select max(substring(replay_of from 10)::int) as last, min(substring(replay_of from 10)::int) as first
      from webhooks.deliveries where endpoint_id = ${e.id} and replay_of is not null`;
    expect(oldestLeft).toEqual({ first: 1, last: 1000 });
    const second = await replayFailed(t, e.id, since);
    expect(second.body, second.text).toEqual({ replayed_count: 5 });
    const third = await replayFailed(t, e.id, since);
    expect(third.body, third.text).toEqual({ replayed_count: 0 });
    const [count] = await db`select count(*)::int as n from webhooks.deliveries where endpoint_id = ${e.id} and replay_of is not null`;
    expect(count?.["n"]).toBe(1005);
  });

  it("when since is not a date-time, or the endpoint is another organization's, then 400 or 404 and nothing is created", async () => {
    const owner = await f.tenant();
    const other = await f.tenant();
    const e = await disabledEndpoint(owner);
    await insertDelivery(owner, e.id, { state: "FAILED" });
    for (const body of [{}, { since: "yesterday" }, { since: minutesAgo(5), extra: true }]) {
      const r = await gw.post(`/v1/webhook-endpoints/${e.id}/replay-failed`, body, { token: owner.apiKey });
      expect(r.status, `${JSON.stringify(body)} → ${r.text}`).toBe(400);
      expect(r.body.code).toBe("validation_failed");
    }
    const r = await replayFailed(other, e.id, minutesAgo(60));
    expect(r.status, r.text).toBe(404);
    expect(r.body.code).toBe("resource_not_found");
    expect(await deliveryRows(e.id)).toHaveLength(1);
  });
});
