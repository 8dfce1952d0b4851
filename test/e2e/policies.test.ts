import { requestFingerprint } from "@tasksvc/gateway";
import { api, awayFromWindowEdge, eventually, factories, gatewayUrl, bodyOf, must } from "@tasksvc/testing";
import postgres from "postgres";
import { afterAll, describe, expect, inject, it } from "vitest";
import { Member, page } from "@tasksvc/contracts";

const stack = inject("stack");
const gw = api(gatewayUrl(stack));
const gw2 = api(gatewayUrl(stack, 1));
const f = factories(stack);
const db = postgres(stack.databaseUrl, { max: 2, onnotice: () => {} });
afterAll(async () => {
  await f.close();
  await db.end({ timeout: 1 });
});

const usageOf = async (token: string) => {
  const r = await gw.get("/v1/usage", { token });
  expect(r.status, r.text).toBe(200);
  return r.body;
};
const keyCount = async (orgId: string) => Number((await db`select count(*)::int as n from keys.api_keys where organization_id = ${orgId}`)[0]?.["n"]);

describe("rate-limit headers", () => {
  it("when a request succeeds, then RateLimit-Policy, RateLimit and X-RateLimit-* describe the burst window", async () => {
    const t = await f.tenant("pro");
    const r = await gw.get("/v1/organizations", { token: t.apiKey });
    expect(r.status, r.text).toBe(200);
    expect(r.headers.get("ratelimit-policy")).toBe('"burst";q=120;w=60, "api-calls";q=50000;w=2592000');
    expect(r.headers.get("ratelimit")).toMatch(/^"burst";r=119;t=([1-9]|[1-5][0-9]|60)$/);
    expect(r.headers.get("x-ratelimit-limit")).toBe("120");
    expect(r.headers.get("x-ratelimit-remaining")).toBe("119");
    const reset = Number(r.headers.get("x-ratelimit-reset"));
    expect(reset).toBeGreaterThan(Date.now() / 1000);
    expect(reset).toBeLessThanOrEqual(Date.now() / 1000 + 61);
  });

  it("when the plan is team, then the policy shows the team allowances", async () => {
    const t = await f.tenant("team");
    const r = await gw.get("/v1/organizations", { token: t.apiKey });
    expect(r.headers.get("ratelimit-policy")).toBe('"burst";q=600;w=60, "api-calls";q=500000;w=2592000');
  });
});

describe("burst limit per credential", () => {
  it("when N+k requests race across two gateway replicas, then exactly k get 429 rate_limited and are not charged", async () => {
    const t = await f.tenant("pro");
    await f.admin("setLimits", { org: t.organizationId, burst: 6 });
    await awayFromWindowEdge();
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? gw2 : gw).get("/v1/organizations", { token: t.apiKey })));
    const limited = results.filter((r) => r.status === 429);
    expect(results.filter((r) => r.status === 200)).toHaveLength(6);
    expect(limited).toHaveLength(4);
    for (const r of limited) {
      expect(r.body.code, r.text).toBe("rate_limited");
      expect(Number(r.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      expect(Number(r.headers.get("retry-after"))).toBeLessThanOrEqual(60);
    }
    // Another credential of the same organization has its own burst window; the 429s were not charged.
    const token = await f.token(t.organizationId, t.userId, ["usage:read"]);
    expect((await usageOf(token)).calls_used).toBe(6 + 1);
  });
});

describe("billing-period allowance per organization", () => {
  it("when the allowance is used up, then 429 quota_exhausted for every credential of the organization", async () => {
    const t = await f.tenant("free");
    await f.admin("setLimits", { org: t.organizationId, quota: 4 });
    const token = await f.token(t.organizationId, t.userId, ["workspaces:read", "usage:read"]);
    const results = await Promise.all([
      ...Array.from({ length: 3 }, () => gw.get("/v1/organizations", { token: t.apiKey })),
      ...Array.from({ length: 3 }, () => gw2.get("/v1/organizations", { token })),
    ]);
    expect(results.filter((r) => r.status === 200)).toHaveLength(4);
    const refused = results.filter((r) => r.status === 429);
    expect(refused).toHaveLength(2);
    for (const r of refused) {
      expect(r.body.code, r.text).toBe("quota_exhausted");
      // Retry-After points at the end of the 30-day period.
      expect(Number(r.headers.get("retry-after"))).toBeGreaterThan(60);
    }
    const after = await gw.get("/v1/usage", { token });
    expect(after.status, after.text).toBe(429);
    // Raising the allowance takes effect on the next request.
    await f.admin("setLimits", { org: t.organizationId, quota: 100 });
    const u = await usageOf(token);
    expect(u.calls_used).toBe(5);
    expect(u.calls_allowance).toBe(100);
  });
});

describe("GET /v1/usage", () => {
  it("when read, then it shows the plan, the 30-day period anchored at the organization's creation, and this call", async () => {
    const t = await f.tenant("pro");
    await awayFromWindowEdge();
    await gw.get("/v1/organizations", { token: t.apiKey });
    const u = await usageOf(t.apiKey);
    const org = (await gw.get(`/v1/organizations/${t.organizationId}`, { token: t.apiKey })).body;
    expect(u).toMatchObject({ plan: "pro", calls_used: 2, calls_allowance: 50_000, burst: { limit: 120, window_seconds: 60, remaining: 118 } });
    expect(Date.parse(u.period_start)).toBe(Date.parse(org.created_at));
    expect(Date.parse(u.period_end) - Date.parse(u.period_start)).toBe(2_592_000_000);
    expect(Date.parse(u.burst.reset_at)).toBeGreaterThan(Date.now());
  });

  it("when 40 calls arrive at once on one replica, then usage read on the other replica settles at exactly 40 plus its own reads", async () => {
    const t = await f.tenant("team");
    const rs = await Promise.all(Array.from({ length: 40 }, () => gw.get("/v1/organizations", { token: t.apiKey })));
    expect(rs.map((r) => r.status)).toEqual(Array(40).fill(200));
    // A replica under load reserves calls in batches and gives back what it did not spend within
    // a second (decision 0007), so a reader elsewhere may briefly see reserved calls; never fewer.
    // Every read is checked for that (an invariant, so not retried); only "exactly" is awaited.
    const reads: Array<{ status: number; text: string; used: number }> = [];
    await eventually(
      async () => {
        const r = await gw2.get("/v1/usage", { token: t.apiKey });
        reads.push({ status: r.status, text: r.text, used: r.body.calls_used });
        expect(r.body.calls_used).toBe(40 + reads.length);
      },
      { intervalMs: 100, what: "usage to settle at 40 plus its own reads" },
    );
    for (const [i, r] of reads.entries()) {
      expect(r.status, r.text).toBe(200);
      expect(r.used).toBeGreaterThanOrEqual(40 + i + 1);
    }
  });
});

describe("Idempotency-Key", () => {
  it("when the same key and body are sent again, then the first response is replayed, marked, not re-executed, not charged", async () => {
    const t = await f.tenant();
    const headers = { "idempotency-key": "mint-ci-key-1" };
    const first = await gw.post("/v1/api-keys", { name: "ci" }, { token: t.apiKey, headers });
    expect(first.status, first.text).toBe(201);
    expect(first.headers.get("idempotency-replayed")).toBeNull();
    const usedBefore = (await usageOf(t.apiKey)).calls_used;
    const again = await gw2.post("/v1/api-keys", { name: "ci" }, { token: t.apiKey, headers });
    expect(again.status, again.text).toBe(201);
    expect(again.headers.get("idempotency-replayed")).toBe("true");
    // The ORIGINAL secret is shown again (spec 4.1), and no second key exists.
    expect(again.body).toEqual(first.body);
    expect(await keyCount(t.organizationId)).toBe(2);
    expect((await usageOf(t.apiKey)).calls_used).toBe(usedBefore + 1);
    expect(again.headers.get("x-request-id")).not.toBe(first.headers.get("x-request-id"));
  });

  it("when the same key comes with a different body or path, then 422 idempotency_key_reused", async () => {
    const t = await f.tenant();
    const headers = { "idempotency-key": "k-422" };
    expect((await gw.post("/v1/api-keys", { name: "a" }, { token: t.apiKey, headers })).status).toBe(201);
    const otherBody = await gw.post("/v1/api-keys", { name: "b" }, { token: t.apiKey, headers });
    expect(otherBody.status, otherBody.text).toBe(422);
    expect(otherBody.body.code).toBe("idempotency_key_reused");
    // Byte-identical means byte-identical: the same JSON with other spacing is another request.
    const spaced = await gw.request("POST", "/v1/api-keys", {
      token: t.apiKey,
      headers: { ...headers, "content-type": "application/json" },
      rawBody: '{ "name": "a" }',
    });
    expect(spaced.status, spaced.text).toBe(422);
    const otherPath = await gw.post("/v1/api-keys?x=1", { name: "a" }, { token: t.apiKey, headers });
    expect(otherPath.status, otherPath.text).toBe(422);
    expect(await keyCount(t.organizationId)).toBe(2);
  });

  it("when another credential uses the same key, then it is a separate request", async () => {
    const t = await f.tenant();
    const token = await f.token(t.organizationId, t.userId, ["api-keys:manage"]);
    const headers = { "idempotency-key": "shared-name" };
    const a = await gw.post("/v1/api-keys", { name: "x" }, { token: t.apiKey, headers });
    const b = await gw.post("/v1/api-keys", { name: "x" }, { token, headers });
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(b.headers.get("idempotency-replayed")).toBeNull();
    expect(a.body.id).not.toBe(b.body.id);
  });

  it("when the first outcome was a 400, then the 400 is stored and replayed", async () => {
    const t = await f.tenant();
    const headers = { "idempotency-key": "bad-body" };
    const first = await gw.post("/v1/api-keys", { name: "" }, { token: t.apiKey, headers });
    expect(first.status, first.text).toBe(400);
    const again = await gw.post("/v1/api-keys", { name: "" }, { token: t.apiKey, headers });
    expect(again.status, again.text).toBe(400);
    expect(again.headers.get("idempotency-replayed")).toBe("true");
    expect(again.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expect(again.body).toEqual(first.body);
  });

  it.each([["x".repeat(256)], ["has space"], ["naïve"]])("when the key is %j, then 400 naming Idempotency-Key", async (key) => {
    const t = await f.tenant();
    const r = await gw.post("/v1/api-keys", { name: "x" }, { token: t.apiKey, headers: { "idempotency-key": key } });
    expect(r.status, r.text).toBe(400);
    expect(r.body.errors[0].pointer).toBe("/Idempotency-Key");
    expect(r.headers.get("x-ratelimit-remaining")).toBe("119");
    expect(await keyCount(t.organizationId)).toBe(1);
  });

  it("when N requests with one key race, then exactly one executes", async () => {
    const t = await f.tenant("team");
    const headers = { "idempotency-key": "race-1" };
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) => (i % 2 ? gw2 : gw).post("/v1/api-keys", { name: "race" }, { token: t.apiKey, headers })),
    );
    const executed = results.filter((r) => r.status === 201 && r.headers.get("idempotency-replayed") === null);
    expect(executed).toHaveLength(1);
    for (const r of results) {
      expect([201, 409], r.text).toContain(r.status);
      if (r.status === 409) expect(r.body.code).toBe("idempotency_in_progress");
      if (r.status === 201) expect(r.body.key).toBe(executed[0]?.body.key);
    }
    expect(await keyCount(t.organizationId)).toBe(2);
  });

  it("when a first execution is still running, then a retry gets 409; when its gateway died (lease over), then the retry runs", async () => {
    const t = await f.tenant();
    const keyRow = (await gw.get("/v1/api-keys", { token: t.apiKey })).body.data[0];
    const body = JSON.stringify({ name: "after-crash" });
    // What a gateway leaves behind when it dies mid-request: a claimed, unfinished record.
    await db`insert into gateway.idempotency_keys (credential_id, key, fingerprint, locked_until)
             values (${keyRow.id}, 'crash-1', ${requestFingerprint("POST", "/v1/api-keys", body)}, now() + interval '1 minute')`;
    const send = () =>
      gw.request("POST", "/v1/api-keys", { token: t.apiKey, headers: { "idempotency-key": "crash-1", "content-type": "application/json" }, rawBody: body });
    const blocked = await send();
    expect(blocked.status, blocked.text).toBe(409);
    expect(blocked.body.code).toBe("idempotency_in_progress");
    await db`update gateway.idempotency_keys set locked_until = now() - interval '1 second' where key = 'crash-1'`;
    const retried = await send();
    expect(retried.status, retried.text).toBe(201);
    expect((await send()).headers.get("idempotency-replayed")).toBe("true");
  });

  it("when a record is older than 24 hours, then the key is free again", async () => {
    const t = await f.tenant();
    const headers = { "idempotency-key": "old-1" };
    expect((await gw.post("/v1/api-keys", { name: "day one" }, { token: t.apiKey, headers })).status).toBe(201);
    // Both records of the key age: the gateway's and the keys service's own (minted in one transaction).
    await db`update gateway.idempotency_keys set created_at = now() - interval '25 hours' where key = 'old-1'`;
    await db`update keys.idempotency set created_at = now() - interval '25 hours' where key = 'old-1'`;
    const r = await gw.post("/v1/api-keys", { name: "day two" }, { token: t.apiKey, headers });
    expect(r.status, r.text).toBe(201);
    expect(r.headers.get("idempotency-replayed")).toBeNull();
    expect(r.body.name).toBe("day two");
  });
});

describe("cursor pagination", () => {
  it("when a cursor is reused with a different limit, then 400 at /after", async () => {
    const t = await f.tenant();
    await f.user(t.organizationId);
    await f.user(t.organizationId);
    const p1 = await gw.get("/v1/members?limit=1", { token: t.apiKey });
    expect(p1.body.has_more).toBe(true);
    const cursor = encodeURIComponent(p1.body.next_cursor);
    expect((await gw.get(`/v1/members?limit=1&after=${cursor}`, { token: t.apiKey })).status).toBe(200);
    const r = await gw.get(`/v1/members?limit=2&after=${cursor}`, { token: t.apiKey });
    expect(r.status, r.text).toBe(400);
    expect(r.body.errors[0]).toMatchObject({ pointer: "/after" });
    // A cursor of one list is not valid on another.
    const other = await gw.get(`/v1/api-keys?limit=1&after=${cursor}`, { token: t.apiKey });
    expect(other.status, other.text).toBe(400);
  });

  it("when a cursor is tampered with, then 400 at /after", async () => {
    const t = await f.tenant();
    await f.user(t.organizationId);
    const p1 = await gw.get("/v1/members?limit=1", { token: t.apiKey });
    const [payload, mac] = must(bodyOf(p1, page(Member)).next_cursor, "a cursor to the second page").split(".");
    const forgedPayload = Buffer.from(
      JSON.stringify({ r: Buffer.from(JSON.stringify(["1970-01-01T00:00:00.000000", ""])).toString("base64url"), q: "x" }),
    ).toString("base64url");
    for (const bad of [`${payload}.${mac?.slice(0, -2)}AA`, `${forgedPayload}.${mac}`, "garbage"]) {
      const r = await gw.get(`/v1/members?limit=1&after=${encodeURIComponent(bad)}`, { token: t.apiKey });
      expect(r.status, r.text).toBe(400);
      expect(r.body.errors[0].pointer).toBe("/after");
    }
  });

  it("when rows are inserted between pages, then paging neither repeats nor skips the rows it started with", async () => {
    const t = await f.tenant("team");
    for (let i = 0; i < 5; i++) await gw.post("/v1/api-keys", { name: `before-${i}` }, { token: t.apiKey });
    const seen: string[] = [];
    let page = await gw.get("/v1/api-keys?limit=2", { token: t.apiKey });
    seen.push(...page.body.data.map((k: { name: string }) => k.name));
    for (let i = 0; i < 3; i++) await gw.post("/v1/api-keys", { name: `during-${i}` }, { token: t.apiKey });
    while (page.body.has_more) {
      page = await gw.get(`/v1/api-keys?limit=2&after=${encodeURIComponent(page.body.next_cursor)}`, { token: t.apiKey });
      expect(page.status, page.text).toBe(200);
      seen.push(...page.body.data.map((k: { name: string }) => k.name));
    }
    expect(seen).toEqual(["before-4", "before-3", "before-2", "before-1", "before-0", "bootstrap"]);
  });
});
