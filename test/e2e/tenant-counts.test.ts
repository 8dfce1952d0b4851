import { isAppError } from "@tasksvc/errors";
import { e2eContext, eventually, openSse, type SseStream, type Tenant, bodyOf, must } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";
import { CreatedApiKey, Member, page } from "@tasksvc/contracts";
import { awaitAuditEvents } from "./audit-helpers.js";

// DESIGN.md section 20, Counts: an organization holds at most 100 live API keys (whichever path
// mints them) and 25 open event streams across every credential and gateway replica.

const { gw, f, db, stack } = e2eContext();
const streamUrl = (i = 0) => `${stack.gatewayUrls[i % stack.gatewayUrls.length]}/v1/events/stream`;

const auth = (t: Tenant) => ({ token: t.apiKey });
const mint = (t: Tenant, name: string, scopes?: string[]) => gw.post("/v1/api-keys", { name, ...(scopes ? { scopes } : {}) }, auth(t));

/** A tenant whose owner may make many calls in a minute. */
async function busyTenant(): Promise<Tenant> {
  const t = await f.tenant();
  await f.admin("setLimits", { org: t.organizationId, burst: 100_000 });
  return t;
}

/** Mints keys until the organization holds `n` live ones (its bootstrap key is the first). */
async function fillTo(t: Tenant, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 1; i < n; i++) {
    const r = await mint(t, `key ${i}`);
    expect(r.status, r.text).toBe(201);
    ids.push(bodyOf(r, CreatedApiKey).id);
  }
  return ids;
}

async function liveKeys(orgId: string): Promise<number> {
  const [row] = await db<{ n: number }[]>`
    select count(*)::int as n from keys.api_keys
    where organization_id = ${orgId} and revoked_at is null and (expires_at is null or expires_at > now())`;
  return row?.n ?? -1;
}

/** The admin operation's refusal code, or "ok". */
async function adminCode(run: () => Promise<unknown>): Promise<string> {
  try {
    await run();
    return "ok";
  } catch (e) {
    if (isAppError(e)) return e.code;
    throw e;
  }
}

describe("at most 100 live API keys per organization", () => {
  it("when an organization holds 100 live keys, then the 101st is 409 limit_reached, and a revoked or expired key makes room", async () => {
    const t = await busyTenant();
    const ids = await fillTo(t, 100);
    expect(await liveKeys(t.organizationId)).toBe(100);

    const refused = await mint(t, "one too many");
    expect(refused.status, refused.text).toBe(409);
    expect(refused.body).toMatchObject({ code: "limit_reached" });
    expect(refused.body.detail).toMatch(/100/);
    expect(refused.body.detail).toMatch(/revoke one/);
    expect(await liveKeys(t.organizationId)).toBe(100);

    expect((await gw.delete(`/v1/api-keys/${ids[0]}`, auth(t))).status).toBe(200);
    const room = await mint(t, "after a revoke");
    expect(room.status, room.text).toBe(201);
    expect((await mint(t, "full again")).status).toBe(409);

    // An expired key no longer counts.
    await db`update keys.api_keys set expires_at = now() - interval '1 second' where id = ${must(ids[1], "the second key")}`;
    const afterExpiry = await mint(t, "after an expiry");
    expect(afterExpiry.status, afterExpiry.text).toBe(201);
    expect(await liveKeys(t.organizationId)).toBe(100);
  });

  it("when a key's name is blank or holds a bidirectional control, then 400 naming /name and no key is minted", async () => {
    const t = await f.tenant();
    for (const name of ["   ", "deploy\u202Egpj.exe"]) {
      const r = await mint(t, name);
      expect(r.status, r.text).toBe(400);
      expect(r.body.errors).toEqual([expect.objectContaining({ pointer: "/name" })]);
    }
    expect(await liveKeys(t.organizationId)).toBe(1);
  });

  it("when 20 keys are minted at once by an organization holding 95, then exactly 5 are created, it never holds more than 100, and only the created keys are in the audit log", async () => {
    const t = await busyTenant();
    await fillTo(t, 95);
    const results = await Promise.all(Array.from({ length: 20 }, (_x, i) => mint(t, `racing ${i}`)));
    const statuses = results.map((r) => r.status).sort();
    expect(
      statuses.filter((s) => s === 201),
      JSON.stringify(statuses),
    ).toHaveLength(5);
    expect(
      statuses.filter((s) => s === 409),
      JSON.stringify(statuses),
    ).toHaveLength(15);
    expect(await liveKeys(t.organizationId)).toBe(100);
    // The mint's statement writes its audit event: a refused mint must write none.
    const created = await awaitAuditEvents(gw, t.apiKey, "action=api_key.created", 100);
    expect(created).toHaveLength(100);
  });

  it("when the organization is full, then the admin CLI's add-user, legacy-key and bootstrap --if-exists reuse are refused with limit_reached and change nothing", async () => {
    const t = await busyTenant();
    await fillTo(t, 100);
    const email = f.email();
    expect(await adminCode(() => f.admin("addUser", { org: t.organizationId, email, role: "member" }))).toBe("limit_reached");
    // The user was not added either: add-user is one step.
    const members = await gw.get("/v1/members?limit=100", auth(t));
    expect(bodyOf(members, page(Member)).data.some((m) => m.email === email)).toBe(false);
    expect(await adminCode(() => f.admin("legacyKey", { org: t.organizationId, user: t.userId }))).toBe("limit_reached");
    const [org] = await db<{ name: string }[]>`select name from keys.organizations where id = ${t.organizationId}`;
    expect(await adminCode(() => f.admin("bootstrap", { org: must(org, "the organization").name, plan: "pro", email: t.email, if_exists: "reuse" }))).toBe(
      "limit_reached",
    );
    expect(await liveKeys(t.organizationId)).toBe(100);
  });
});

describe("at most 25 open event streams per organization", () => {
  it("when an organization holds 25 streams over several keys and both replicas, then the 26th is 429 rate_limited with Retry-After, and closing one frees a place", async () => {
    const t = await busyTenant();
    // Five keys (5 streams each, the credential's limit), and a sixth with none open.
    const keys = [t.apiKey];
    for (let i = 0; i < 5; i++) {
      const r = await mint(t, `reader ${i}`, ["tasks:read"]);
      expect(r.status, r.text).toBe(201);
      keys.push(bodyOf(r, CreatedApiKey).key);
    }
    const open: SseStream[] = [];
    try {
      for (let k = 0; k < 5; k++) {
        const streams = await Promise.all(Array.from({ length: 5 }, (_x, i) => openSse(streamUrl(k + i), { token: must(keys[k], `key ${k}`) })));
        expect(streams.map((s) => s.status)).toEqual([200, 200, 200, 200, 200]);
        open.push(...streams);
      }
      const fresh = must(keys[5], "the sixth key");
      const refused = await openSse(streamUrl(), { token: fresh });
      expect(refused.status).toBe(429);
      expect(refused.problem).toMatchObject({ code: "rate_limited" });
      expect(JSON.stringify(refused.problem)).toMatch(/organization already has 25/);
      expect(Number(refused.headers["retry-after"])).toBeGreaterThan(0);
      // On the other replica too.
      const refused2 = await openSse(streamUrl(1), { token: fresh });
      expect(refused2.status).toBe(429);

      // Another organization is not affected.
      const other = await f.tenant();
      const theirs = await openSse(streamUrl(), { token: other.apiKey });
      expect(theirs.status).toBe(200);
      theirs.close();

      open.shift()?.close();
      const again = await eventually(
        async () => {
          const s = await openSse(streamUrl(), { token: fresh });
          return s.status === 200 ? s : false;
        },
        { timeoutMs: 15_000, what: "a closed stream to give its organization's place back" },
      );
      open.push(again);
    } finally {
      for (const s of open) s.close();
    }
  });
});
