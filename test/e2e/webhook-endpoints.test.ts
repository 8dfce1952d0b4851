import { e2eContext } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";

const { gw, gw2, f, db } = e2eContext();

const rowsOf = async (orgId: string) =>
  db<{ id: string; secret_sealed: string; failure_count: number; failing_since: Date | null }[]>`
    select id, secret_sealed, failure_count, failing_since from webhooks.endpoints where organization_id = ${orgId}`;

const create = (token: string, body: unknown, headers: Record<string, string> = {}) => gw.post("/v1/webhook-endpoints", body, { token, headers });

describe("webhook endpoints", () => {
  it("when created, then 201 with a whsec_ secret that no read shows, stored only sealed", async () => {
    const t = await f.tenant();
    const r = await create(t.apiKey, { url: "https://hooks.example.com/tasks", event_types: ["task.created"] });
    expect(r.status, r.text).toBe(201);
    expect(r.body).toEqual({
      id: expect.stringMatching(/^whe_/),
      url: "https://hooks.example.com/tasks",
      enabled: true,
      event_types: ["task.created"],
      verified: false,
      disabled_reason: null,
      failure_count: 0,
      last_success_at: null,
      last_failure_at: null,
      rate_limit: null,
      created_at: expect.any(String),
      updated_at: r.body.created_at,
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]+=*$/),
    });
    const { secret, ...endpoint } = r.body;
    const got = await gw.get(`/v1/webhook-endpoints/${r.body.id}`, { token: t.apiKey });
    expect(got.status, got.text).toBe(200);
    expect(got.body).toEqual(endpoint);
    const list = await gw.get("/v1/webhook-endpoints", { token: t.apiKey });
    expect(list.status, list.text).toBe(200);
    expect(list.body).toEqual({ data: [endpoint], has_more: false, next_cursor: null });
    expect(got.text + list.text).not.toContain(secret);
    const [row] = await rowsOf(t.organizationId);
    expect(row?.secret_sealed.startsWith("v1.")).toBe(true);
    expect(row?.secret_sealed).not.toContain(secret);
    expect(row?.secret_sealed).not.toContain(secret.slice("whsec_".length));
    // The service's idempotency record holds nothing of the plain secret either.
    const records = await db`select result::text as result from webhooks.idempotency`;
    expect(records.map((x) => String(x["result"])).join("\n")).not.toContain(secret);
  });

  it("when created again with the same Idempotency-Key, then the same secret is replayed and one endpoint exists", async () => {
    const t = await f.tenant();
    const headers = { "idempotency-key": "create-hook" };
    const body = { url: "https://hooks.example.com/a" };
    const first = await create(t.apiKey, body, headers);
    expect(first.status, first.text).toBe(201);
    expect(first.body.event_types).toEqual([]);
    const again = await gw2.post("/v1/webhook-endpoints", body, { token: t.apiKey, headers });
    expect(again.status, again.text).toBe(201);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get("idempotency-replayed")).toBe("true");
    expect(await rowsOf(t.organizationId)).toHaveLength(1);
    // The gateway's record of the key keeps the status, never the body with the secret: the
    // replay above came from the service's record, where the secret is sealed.
    const records = await db<{ status: number; response_body: string; replay_from_service: boolean }[]>`
      select status, response_body, replay_from_service from gateway.idempotency_keys where key = 'create-hook'`;
    expect(records).toEqual([{ status: 201, response_body: "", replay_from_service: true }]);
    const everything = await db`select response_body from gateway.idempotency_keys`;
    expect(JSON.stringify(everything)).not.toContain(first.body.secret);
    // Another key is another create (at another URL: one endpoint per URL in an organization).
    const other = await create(t.apiKey, { url: "https://hooks.example.com/b" }, { "idempotency-key": "create-hook-2" });
    expect(other.status, other.text).toBe(201);
    expect(other.body.secret).not.toBe(first.body.secret);
  });

  it("when pages are asked for, then newest first with a cursor", async () => {
    const t = await f.tenant();
    const a = (await create(t.apiKey, { url: "https://hooks.example.com/1" })).body;
    const b = (await create(t.apiKey, { url: "https://hooks.example.com/2" })).body;
    const page1 = await gw.get("/v1/webhook-endpoints?limit=1", { token: t.apiKey });
    expect(
      page1.body.data.map((e: { id: string }) => e.id),
      page1.text,
    ).toEqual([b.id]);
    expect(page1.body.has_more).toBe(true);
    const page2 = await gw.get(`/v1/webhook-endpoints?limit=1&after=${encodeURIComponent(page1.body.next_cursor)}`, { token: t.apiKey });
    expect(
      page2.body.data.map((e: { id: string }) => e.id),
      page2.text,
    ).toEqual([a.id]);
    expect(page2.body.has_more).toBe(false);
  });

  it("when the plan lacks outbound_webhooks (free), then 403 feature_not_enabled and nothing is created", async () => {
    const t = await f.tenant("free");
    const r = await create(t.apiKey, { url: "https://hooks.example.com/free" });
    expect(r.status, r.text).toBe(403);
    expect(r.body.code).toBe("feature_not_enabled");
    expect(await rowsOf(t.organizationId)).toHaveLength(0);
  });

  it("when the body breaks a rule, then 400 validation_failed naming the field", async () => {
    const t = await f.tenant();
    const cases: Array<[unknown, string]> = [
      [{ url: "http://hooks.example.com/plain" }, "/url"],
      [{ url: "https://user:pass@hooks.example.com/" }, "/url"],
      [{ url: "not a url" }, "/url"],
      [{ url: `https://hooks.example.com/${"a".repeat(2048)}` }, "/url"],
      [{}, "/url"],
      [{ url: "https://hooks.example.com/", event_types: ["task.erased"] }, "/event_types/0"],
      [{ url: "https://hooks.example.com/", event_types: ["task.created", "task.created"] }, "/event_types"],
      [{ url: "https://hooks.example.com/", secret: "whsec_mine" }, "/secret"],
    ];
    for (const [body, pointer] of cases) {
      const r = await create(t.apiKey, body);
      expect(r.status, `${JSON.stringify(body)} → ${r.text}`).toBe(400);
      expect(r.body.code).toBe("validation_failed");
      expect(r.body.errors, r.text).toEqual(expect.arrayContaining([expect.objectContaining({ pointer })]));
    }
    expect(await rowsOf(t.organizationId)).toHaveLength(0);
  });

  // The stack keeps the egress guard's defaults (private targets refused): what every delivery
  // would be refused is refused when the URL is set, instead of being retried for days.
  it("when the URL is a loopback, private or metadata address, or a name resolving only to one, then 400 at /url on create and on update", async () => {
    const t = await f.tenant();
    const refused: Array<[string, RegExp]> = [
      ["https://127.0.0.1/hook", /points at a loopback address \(127\.0\.0\.1\)/],
      ["https://[::1]/hook", /points at a loopback address/],
      ["https://10.0.0.1/hook", /points at a private address \(10\.0\.0\.1\)/],
      ["https://169.254.169.254/latest/meta-data/", /points at a cloud metadata address/],
      ["https://[::ffff:192.168.1.1]/", /points at a private address/],
      ["https://localhost:8443/hook", /points at localhost, which resolves only to loopback addresses/],
    ];
    for (const [url, message] of refused) {
      const r = await create(t.apiKey, { url });
      expect(r.status, `${url} → ${r.text}`).toBe(400);
      expect(r.body.code).toBe("validation_failed");
      expect(r.body.errors, r.text).toEqual([{ pointer: "/url", message: expect.stringMatching(message) }]);
      expect(r.body.errors[0].message).toMatch(/public addresses only/);
    }
    expect(await rowsOf(t.organizationId)).toHaveLength(0);
    // A name that does not resolve (yet) is accepted: each delivery checks it again.
    const e = await create(t.apiKey, { url: "https://hooks.not-yet.invalid/tasks" });
    expect(e.status, e.text).toBe(201);
    const path = `/v1/webhook-endpoints/${e.body.id}`;
    const moved = await gw.patch(path, { url: "https://localhost/hook" }, { token: t.apiKey });
    expect(moved.status, moved.text).toBe(400);
    expect(moved.body.errors).toEqual([{ pointer: "/url", message: expect.stringMatching(/points at localhost, which resolves only to loopback addresses/) }]);
    expect((await gw.get(path, { token: t.apiKey })).body.url).toBe("https://hooks.not-yet.invalid/tasks");
  });

  it("when patched, then url, event_types and enabled change, and enabling resets the failure count", async () => {
    const t = await f.tenant();
    const e = (await create(t.apiKey, { url: "https://hooks.example.com/old" })).body;
    const path = `/v1/webhook-endpoints/${e.id}`;
    const off = await gw.patch(path, { enabled: false }, { token: t.apiKey });
    expect(off.status, off.text).toBe(200);
    expect(off.body).toMatchObject({ id: e.id, enabled: false, url: e.url });
    expect(off.body).not.toHaveProperty("secret");
    await db`update webhooks.endpoints set failure_count = 7, failing_since = now() - interval '3 days', disabled_reason = 'too many failures' where id = ${e.id}`;
    const on = await gw.patch(
      path,
      { enabled: true, url: "https://hooks.example.com/new", event_types: ["task.updated", "task.archived"] },
      { token: t.apiKey },
    );
    expect(on.status, on.text).toBe(200);
    expect(on.body).toMatchObject({
      enabled: true,
      disabled_reason: null,
      failure_count: 0,
      url: "https://hooks.example.com/new",
      event_types: ["task.updated", "task.archived"],
    });
    expect(on.body.updated_at >= e.updated_at).toBe(true);
    expect((await rowsOf(t.organizationId))[0]).toMatchObject({ failure_count: 0, failing_since: null });
    const bad = await gw.patch(path, { url: "http://hooks.example.com/" }, { token: t.apiKey });
    expect(bad.status, bad.text).toBe(400);
    expect(bad.body.errors).toEqual([expect.objectContaining({ pointer: "/url" })]);
    expect((await gw.get(path, { token: t.apiKey })).body.url).toBe("https://hooks.example.com/new");
  });

  it("when disabled through PATCH, then its PENDING deliveries become DISABLED with no next attempt, and nothing else changes", async () => {
    const t = await f.tenant();
    const e = (await create(t.apiKey, { url: "https://hooks.example.com/queued" })).body;
    const other = (await create(t.apiKey, { url: "https://hooks.example.com/other" })).body;
    // Due in an hour: the dispatcher claims only due rows, so none of these is taken meanwhile.
    const later = new Date(Date.now() + 3600_000).toISOString();
    const insert = (id: string, endpointId: string, state: string) => db`
      insert into webhooks.deliveries (id, organization_id, endpoint_id, event_id, event_type, payload, state, next_attempt_at)
      values (${id}, ${t.organizationId}, ${endpointId}, ${`evt_${id}`}, 'task.created', '{}'::jsonb, ${state}, ${later})`;
    const suffix = e.id.slice(-8);
    await insert(`whd_p1_${suffix}`, e.id, "PENDING");
    await insert(`whd_p2_${suffix}`, e.id, "PENDING");
    await insert(`whd_s_${suffix}`, e.id, "SUCCEEDED");
    await insert(`whd_o_${suffix}`, other.id, "PENDING");
    const off = await gw.patch(`/v1/webhook-endpoints/${e.id}`, { enabled: false }, { token: t.apiKey });
    expect(off.status, off.text).toBe(200);
    const rows = await db<{ id: string; state: string; next_attempt_at: Date | null }[]>`
      select id, state, next_attempt_at from webhooks.deliveries where organization_id = ${t.organizationId} order by id`;
    expect(rows.map((r) => [r.id, r.state, r.next_attempt_at === null])).toEqual([
      [`whd_o_${suffix}`, "PENDING", false],
      [`whd_p1_${suffix}`, "DISABLED", true],
      [`whd_p2_${suffix}`, "DISABLED", true],
      [`whd_s_${suffix}`, "SUCCEEDED", false],
    ]);
    // A PATCH that leaves enabled alone, or enables, touches no delivery.
    await db`update webhooks.deliveries set state = 'PENDING', next_attempt_at = ${later} where id = ${`whd_p1_${suffix}`}`;
    const renamed = await gw.patch(`/v1/webhook-endpoints/${e.id}`, { url: "https://hooks.example.com/renamed" }, { token: t.apiKey });
    expect(renamed.status, renamed.text).toBe(200);
    const [p1] = await db`select state from webhooks.deliveries where id = ${`whd_p1_${suffix}`}`;
    expect(p1?.["state"]).toBe("PENDING");
    await gw.delete(`/v1/webhook-endpoints/${other.id}`, { token: t.apiKey });
  });

  it("when deleted, then 200 {id} and a later read or delete is 404", async () => {
    const t = await f.tenant();
    const e = (await create(t.apiKey, { url: "https://hooks.example.com/gone" })).body;
    const path = `/v1/webhook-endpoints/${e.id}`;
    const del = await gw.delete(path, { token: t.apiKey });
    expect(del.status, del.text).toBe(200);
    expect(del.body).toEqual({ id: e.id });
    for (const r of [await gw.get(path, { token: t.apiKey }), await gw.delete(path, { token: t.apiKey })]) {
      expect(r.status, r.text).toBe(404);
      expect(r.body.code).toBe("resource_not_found");
    }
    expect(await rowsOf(t.organizationId)).toHaveLength(0);
  });

  it("when another organization names the endpoint, then 404 for every operation and it is unchanged", async () => {
    const owner = await f.tenant();
    const other = await f.tenant();
    const e = (await create(owner.apiKey, { url: "https://hooks.example.com/mine" })).body;
    const path = `/v1/webhook-endpoints/${e.id}`;
    for (const r of [
      await gw.get(path, { token: other.apiKey }),
      await gw.patch(path, { enabled: false }, { token: other.apiKey }),
      await gw.delete(path, { token: other.apiKey }),
    ]) {
      expect(r.status, r.text).toBe(404);
      expect(r.body.code).toBe("resource_not_found");
    }
    expect((await gw.get("/v1/webhook-endpoints", { token: other.apiKey })).body.data).toEqual([]);
    expect((await gw.get(path, { token: owner.apiKey })).body).toMatchObject({ enabled: true });
  });
});
