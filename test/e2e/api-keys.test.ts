import { DEFAULT_KEY_SCOPES, keysRpc, SCOPES, CreatedApiKey } from "@tasksvc/contracts";
import { client, connectNats } from "@tasksvc/nats";
import { api, eventually, factories, must, gatewayUrl, bodyOf } from "@tasksvc/testing";
import postgres from "postgres";
import { afterAll, describe, expect, inject, it } from "vitest";

const stack = inject("stack");
const gw = api(gatewayUrl(stack));
const gw2 = api(gatewayUrl(stack, 1));
const f = factories(stack);
const db = postgres(stack.databaseUrl, { max: 1, onnotice: () => {} });
afterAll(async () => {
  await f.close();
  await db.end({ timeout: 1 });
});

const listKeys = async (token: string) => (await gw.get("/v1/api-keys?limit=100", { token })).body.data as Array<Record<string, unknown>>;

describe("POST /v1/api-keys", () => {
  it("when an owner mints a key, then 201 shows the secret once and it works", async () => {
    const t = await f.tenant();
    const r = await gw.post("/v1/api-keys", { name: "ci deploys" }, { token: t.apiKey });
    expect(r.status, r.text).toBe(201);
    expect(r.body.key).toMatch(/^svc_live_[0-9A-Za-z]{43}$/);
    expect(r.body).toMatchObject({ name: "ci deploys", legacy: false, expires_at: null, last_used_at: null });
    expect(r.body.key_prefix).toBe(r.body.key.slice(0, 12));
    expect(r.body.id).toMatch(/^key_/);
    // Default scopes: every scope except api-keys:manage (spec 4.1).
    expect([...r.body.scopes].sort()).toEqual([...DEFAULT_KEY_SCOPES].sort());
    expect(r.body.scopes).not.toContain("api-keys:manage");

    const use = await gw.get("/v1/organizations", { token: r.body.key });
    expect(use.status, use.text).toBe(200);
    // Listings never carry the secret.
    const listed = (await listKeys(t.apiKey)).find((k) => k.id === r.body.id);
    expect(listed).toBeDefined();
    expect(listed).not.toHaveProperty("key");
    expect(JSON.stringify(await listKeys(t.apiKey))).not.toContain(r.body.key);
  });

  it("when only a hash is stored, then the database never holds the secret", async () => {
    const t = await f.tenant();
    const r = await gw.post("/v1/api-keys", { name: "hash check" }, { token: t.apiKey });
    const rows = await db`select * from keys.api_keys where id = ${r.body.id}`;
    expect(JSON.stringify(rows)).not.toContain(r.body.key);
    expect(rows[0]?.["key_hash"]).toMatch(/^[0-9a-f]{64}$/);
  });

  it("when api-keys:manage is asked for explicitly, then the new key can mint keys", async () => {
    const t = await f.tenant();
    const r = await gw.post("/v1/api-keys", { name: "admin", scopes: ["api-keys:manage"] }, { token: t.apiKey });
    expect(r.status, r.text).toBe(201);
    expect(r.body.scopes).toEqual(["api-keys:manage"]);
    const again = await gw.post("/v1/api-keys", { name: "child" }, { token: r.body.key });
    expect(again.status, again.text).toBe(201);
  });

  it("when test_mode is true, then the key has the sandbox prefix svc_test_", async () => {
    const t = await f.tenant();
    const r = await gw.post("/v1/api-keys", { name: "sandbox", test_mode: true }, { token: t.apiKey });
    expect(r.status, r.text).toBe(201);
    expect(r.body.key).toMatch(/^svc_test_/);
    expect(r.body.key_prefix).toMatch(/^svc_test_/);
    expect((await gw.get("/v1/organizations", { token: r.body.key })).status).toBe(200);
  });

  it("when expires_in_days is given, then expires_at is that many days ahead", async () => {
    const t = await f.tenant();
    const before = Date.now();
    const r = await gw.post("/v1/api-keys", { name: "temp", expires_in_days: 30 }, { token: t.apiKey });
    expect(r.status, r.text).toBe(201);
    const at = Date.parse(r.body.expires_at);
    expect(at).toBeGreaterThanOrEqual(before + 30 * 86_400_000 - 1000);
    expect(at).toBeLessThanOrEqual(Date.now() + 30 * 86_400_000 + 1000);
  });

  it.each([
    [{}, "/name"],
    [{ name: "" }, "/name"],
    [{ name: "x".repeat(201) }, "/name"],
    [{ name: 42 }, "/name"],
    [{ name: "x", scopes: ["tasks:read", "tasks:destroy"] }, "/scopes/1"],
    [{ name: "x", scopes: [] }, "/scopes"],
    [{ name: "x", expires_in_days: 0 }, "/expires_in_days"],
    [{ name: "x", expires_in_days: 366 }, "/expires_in_days"],
    [{ name: "x", expires_in_days: 1.5 }, "/expires_in_days"],
    [{ name: "x", test_mode: "yes" }, "/test_mode"],
    [{ name: "x", colour: "red" }, "/colour"],
  ])("when the body is %j, then 400 names %s and no key is created", async (body, pointer) => {
    const t = await f.tenant();
    const before = await listKeys(t.apiKey);
    const r = await gw.post("/v1/api-keys", body, { token: t.apiKey });
    expect(r.status, r.text).toBe(400);
    expect(r.body.code).toBe("validation_failed");
    expect(
      r.body.errors.map((e: { pointer: string }) => e.pointer),
      r.text,
    ).toContain(pointer);
    expect(await listKeys(t.apiKey)).toHaveLength(before.length);
  });

  it("when the calling user is a member (not owner or admin), then 403 insufficient_scope even with the scope", async () => {
    const t = await f.tenant();
    const m = await f.user(t.organizationId, "member");
    const token = await f.token(t.organizationId, m.userId, ["api-keys:manage"]);
    const r = await gw.post("/v1/api-keys", { name: "nope" }, { token });
    expect(r.status, r.text).toBe(403);
    expect(r.body.code).toBe("insufficient_scope");
  });

  it("when an admin is demoted, then the very next mint is refused", async () => {
    const t = await f.tenant();
    const a = await f.user(t.organizationId, "admin");
    const token = await f.token(t.organizationId, a.userId, ["api-keys:manage"]);
    const first = await gw.post("/v1/api-keys", { name: "as admin", scopes: ["api-keys:manage", "workspaces:read"] }, { token });
    expect(first.status, first.text).toBe(201);
    await f.admin("setRole", { org: t.organizationId, user: a.userId, role: "member" });
    // Both the token and the key the admin minted act as the (now demoted) user.
    for (const credential of [token, bodyOf(first, CreatedApiKey).key]) {
      const r = await gw.post("/v1/api-keys", { name: "after demotion" }, { token: credential });
      expect(r.status, r.text).toBe(403);
      expect(r.body.code).toBe("insufficient_scope");
    }
  });

  it("when the gateway's record of a keyed mint is lost (its gateway died after the key was minted), then the retry gets the same key back, not a second one", async () => {
    const t = await f.tenant();
    const headers = { "idempotency-key": "mint-once" };
    const first = await gw.post("/v1/api-keys", { name: "minted once" }, { token: t.apiKey, headers });
    expect(first.status, first.text).toBe(201);
    // The gateway's record keeps the outcome, never the minted key (decision 0015): a replay is
    // answered by the keys service's own record.
    const replay = await gw2.post("/v1/api-keys", { name: "minted once" }, { token: t.apiKey, headers });
    expect(replay.body).toEqual(first.body);
    expect(replay.headers.get("idempotency-replayed")).toBe("true");
    const [record] = await db<{ response_body: string; replay_from_service: boolean }[]>`
      select response_body, replay_from_service from gateway.idempotency_keys where key = 'mint-once'`;
    expect(record).toEqual({ response_body: "", replay_from_service: true });
    // What a gateway killed between the mint and its own record leaves once its claim expired.
    await db`delete from gateway.idempotency_keys where key = 'mint-once'`;
    const retry = await gw2.post("/v1/api-keys", { name: "minted once" }, { token: t.apiKey, headers });
    expect(retry.status, retry.text).toBe(201);
    expect(retry.body).toEqual(first.body);
    const rows = await db`select id from keys.api_keys where organization_id = ${t.organizationId} and name = 'minted once'`;
    expect(rows.map((r) => r["id"])).toEqual([first.body.id]);
    // The recorded answer is the stored key as a read shows it.
    const { key: _secret, ...shown } = first.body;
    expect((await listKeys(t.apiKey)).find((k) => k["id"] === first.body.id)).toEqual(shown);
    // The keys service's record, the only place the secret is kept, holds it sealed (decision 0022).
    const [own] = await db<{ result: string }[]>`select result::text as result from keys.idempotency where key = 'mint-once'`;
    expect(own?.result).not.toContain(first.body.key);
    expect(own?.result).not.toContain(first.body.key.slice(9, 30));
    expect(JSON.parse(own?.result ?? "{}")).toEqual({ ...shown, key_sealed: expect.stringMatching(/^v1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/) });
  });

  it("when a keyed mint was recorded before records were sealed (plain), then its replay still answers that key", async () => {
    const t = await f.tenant();
    const nc = await connectNats({ url: stack.natsUrl, name: "test-legacy-record" });
    try {
      const keys = client(nc, keysRpc, { namespace: stack.namespace, timeoutMs: 10_000 });
      const ctx = {
        request_id: "req_legacy_record",
        organization_id: t.organizationId,
        user_id: t.userId,
        credential_id: `key_legacy_${t.organizationId}`,
        scopes: [...SCOPES],
        plan: "pro" as const,
        idempotency_key: "plain-record",
      };
      const recorded = {
        id: "key_recorded_plain",
        name: "recorded plain",
        key_prefix: "svc_live_abc",
        scopes: ["tasks:read"],
        last_used_at: null,
        expires_at: null,
        created_at: "2026-11-24T00:00:00.000Z",
        legacy: false,
        key: "svc_live_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ",
      };
      await db`insert into keys.idempotency (credential_id, key, operation, result)
        values (${ctx.credential_id}, ${ctx.idempotency_key}, 'createApiKey', ${db.json(recorded)})`;
      const answer = await keys.call("createApiKey", { name: "recorded plain" }, ctx);
      expect(answer).toMatchObject({ id: recorded.id, key: recorded.key });
    } finally {
      await nc.close();
    }
  });

  it("when two executions of one keyed mint reach the keys service at once (twins), then both answer the same key and one is stored", async () => {
    const t = await f.tenant();
    const nc = await connectNats({ url: stack.natsUrl, name: "test-twins" });
    try {
      const keys = client(nc, keysRpc, { namespace: stack.namespace, timeoutMs: 10_000 });
      const ctx = {
        request_id: "req_twins",
        organization_id: t.organizationId,
        user_id: t.userId,
        credential_id: "key_twin_credential",
        scopes: [...SCOPES],
        plan: "pro" as const,
        idempotency_key: "twin-mint",
      };
      const answers = await Promise.all(Array.from({ length: 6 }, () => keys.call("createApiKey", { name: "twin" }, ctx)));
      expect(new Set(answers.map((a) => a.key)).size).toBe(1);
      const rows = await db`select id from keys.api_keys where organization_id = ${t.organizationId} and name = 'twin'`;
      expect(rows.map((r) => r["id"])).toEqual([answers[0]?.id]);
    } finally {
      await nc.close();
    }
  });
});

describe("mints of one organization at once", () => {
  it("when 12 mints of one organization reach the keys service together, then they share transactions (their rows share a transaction id), and each gets its own key", async () => {
    const t = await f.tenant();
    const nc = await connectNats({ url: stack.natsUrl, name: "test-mints-together" });
    try {
      const keys = client(nc, keysRpc, { namespace: stack.namespace, timeoutMs: 10_000 });
      const ctx = (i: number) => ({
        request_id: `req_together_${i}`,
        organization_id: t.organizationId,
        user_id: t.userId,
        credential_id: "key_together_credential",
        scopes: [...SCOPES],
        plan: "pro" as const,
        idempotency_key: `together-${i}`,
      });
      const answers = await Promise.all(Array.from({ length: 12 }, (_x, i) => keys.call("createApiKey", { name: "together" }, ctx(i))));
      expect(new Set(answers.map((a) => a.key)).size).toBe(12);
      const rows = await db<{ id: string; tx: string }[]>`
        select id, xmin::text as tx from keys.api_keys where organization_id = ${t.organizationId} and name = 'together'`;
      expect(rows.map((r) => r.id).sort()).toEqual(answers.map((a) => a.id).sort());
      // One transaction each would be 12; the first goes alone, the rest wait for it and go together
      // (on each keys replica).
      expect(new Set(rows.map((r) => r.tx)).size).toBeLessThanOrEqual(6);
    } finally {
      await nc.close();
    }
  });
});

describe("GET /v1/api-keys", () => {
  it("when listing, then only this organization's keys appear, newest first, paginated", async () => {
    const t = await f.tenant();
    const other = await f.tenant();
    for (const name of ["k1", "k2", "k3"]) expect((await gw.post("/v1/api-keys", { name }, { token: t.apiKey })).status).toBe(201);
    const otherKeys = await listKeys(other.apiKey);
    const all = await listKeys(t.apiKey);
    expect(all.map((k) => k.name)).toEqual(["k3", "k2", "k1", "bootstrap"]);
    expect(all.some((k) => otherKeys.some((o) => o.id === k.id))).toBe(false);

    const p1 = await gw.get("/v1/api-keys?limit=3", { token: t.apiKey });
    expect(p1.body.has_more).toBe(true);
    expect(p1.body.data).toHaveLength(3);
    const p2 = await gw.get(`/v1/api-keys?limit=3&after=${encodeURIComponent(p1.body.next_cursor)}`, { token: t.apiKey });
    expect(p2.status, p2.text).toBe(200);
    expect(p2.body.data.map((k: { name: string }) => k.name)).toEqual(["bootstrap"]);
    expect(p2.body).toMatchObject({ has_more: false, next_cursor: null });
  });
});

describe("DELETE /v1/api-keys/{key_id}", () => {
  it("when a current key is revoked, then it is deleted and refused at once on every gateway replica", async () => {
    const t = await f.tenant();
    const k = (await gw.post("/v1/api-keys", { name: "doomed" }, { token: t.apiKey })).body;
    // Warm the identity cache of both replicas.
    expect((await gw.get("/v1/organizations", { token: k.key })).status).toBe(200);
    expect((await gw2.get("/v1/organizations", { token: k.key })).status).toBe(200);
    const del = await gw.delete(`/v1/api-keys/${k.id}`, { token: t.apiKey });
    expect(del.status, del.text).toBe(200);
    expect(del.body).toEqual({ id: k.id, legacy: false });
    for (const g of [gw2, gw]) {
      const r = await g.get("/v1/organizations", { token: k.key });
      expect(r.status, r.text).toBe(401);
      expect(r.body.code).toBe("invalid_api_key");
    }
    expect((await db`select 1 from keys.api_keys where id = ${k.id}`).length).toBe(0);
    const again = await gw.delete(`/v1/api-keys/${k.id}`, { token: t.apiKey });
    expect(again.status, again.text).toBe(404);
  });

  it("when a key revokes itself, then 200 and it is refused afterwards", async () => {
    const t = await f.tenant();
    const k = (await gw.post("/v1/api-keys", { name: "self", scopes: ["api-keys:manage"] }, { token: t.apiKey })).body;
    const del = await gw2.delete(`/v1/api-keys/${k.id}`, { token: k.key });
    expect(del.status, del.text).toBe(200);
    const r = await gw2.get("/v1/api-keys", { token: k.key });
    expect(r.status, r.text).toBe(401);
  });

  it("when a legacy key is revoked, then it is soft-revoked with legacy true", async () => {
    const t = await f.tenant();
    const legacy = await f.admin("legacyKey", { org: t.organizationId, user: t.userId });
    expect(legacy.api_key).toMatch(/^svc_[0-9A-Za-z]{40}$/);
    expect((await gw.get("/v1/organizations", { token: legacy.api_key })).status).toBe(200);
    const listed = (await listKeys(t.apiKey)).find((k) => k.id === legacy.id);
    expect(listed).toMatchObject({ legacy: true, key_prefix: legacy.api_key.slice(0, 12), name: null });

    const del = await gw.delete(`/v1/api-keys/${legacy.id}`, { token: t.apiKey });
    expect(del.status, del.text).toBe(200);
    expect(del.body).toEqual({ id: legacy.id, legacy: true });
    expect((await gw.get("/v1/organizations", { token: legacy.api_key })).status).toBe(401);
    const rows = await db`select revoked_at from keys.api_keys where id = ${legacy.id}`;
    expect(rows[0]?.["revoked_at"]).toBeInstanceOf(Date);
    expect((await listKeys(t.apiKey)).some((k) => k.id === legacy.id)).toBe(false);
    expect((await gw.delete(`/v1/api-keys/${legacy.id}`, { token: t.apiKey })).status).toBe(404);
  });

  it("when the id is unknown or another organization's, then 404 resource_not_found and nothing changes", async () => {
    const a = await f.tenant();
    const b = await f.tenant();
    const bKey = (await gw.post("/v1/api-keys", { name: "b's" }, { token: b.apiKey })).body;
    for (const id of [bKey.id, "key_doesnotexist"]) {
      const r = await gw.delete(`/v1/api-keys/${id}`, { token: a.apiKey });
      expect(r.status, r.text).toBe(404);
      expect(r.body.code).toBe("resource_not_found");
    }
    expect((await gw.get("/v1/organizations", { token: bKey.key })).status).toBe(200);
  });
});

describe("key lifetime", () => {
  it("when a key's expiry has passed, then it is refused with invalid_api_key", async () => {
    const t = await f.tenant();
    const k = (await gw.post("/v1/api-keys", { name: "short", expires_in_days: 1 }, { token: t.apiKey })).body;
    // Time travel for the row (the key was never used, so no replica has it cached).
    await db`update keys.api_keys set expires_at = now() - interval '1 second' where id = ${k.id}`;
    const r = await gw.get("/v1/organizations", { token: k.key });
    expect(r.status, r.text).toBe(401);
    expect(r.body.code).toBe("invalid_api_key");
  });

  it("when a key is used, then last_used_at is set", async () => {
    const t = await f.tenant();
    const k = (await gw.post("/v1/api-keys", { name: "used" }, { token: t.apiKey })).body;
    await gw.get("/v1/organizations", { token: k.key });
    await eventually(async () => expect(typeof (await listKeys(t.apiKey)).find((x) => x.id === k.id)?.["last_used_at"]).toBe("string"), {
      what: "last_used_at to be set",
    });
  });

  it("when bootstrap mints the first key, then it has every scope", async () => {
    const t = await f.tenant();
    const first = must(
      (await listKeys(t.apiKey)).find((k) => k.name === "bootstrap"),
      "the bootstrap key among the listed keys",
    );
    expect([...(first["scopes"] as string[])].sort()).toEqual([...SCOPES].sort());
  });
});
