import { randomBytes } from "node:crypto";
import { api, e2eContext, startExtraGateway, type Tenant } from "@tasksvc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// Invitations (DESIGN.md section 12): an owner or admin invites an email address with a role; the
// token is shown once and kept only as a hash; accepting takes no credential, makes the member and
// answers an API key with the default scopes. Every token that cannot be accepted answers the same
// 404, a token is accepted once however many ask at the same moment, and the accept route is
// limited per client address.
const { stack, gw, gw2, f, db } = e2eContext();

const as = (token: string, key?: string) => ({ token, ...(key === undefined ? {} : { headers: { "idempotency-key": key } }) });
const writer = (t: Tenant, userId: string) => f.token(t.organizationId, userId, ["members:read", "members:write"]);
const accept = (token: string, keyName = "laptop", via = gw) => via.post("/v1/invitations/accept", { token, key_name: keyName });

async function invite(t: Tenant, email: string, role = "member", credential = t.apiKey) {
  const r = await gw.post("/v1/invitations", { email, role }, as(credential));
  expect(r.status, r.text).toBe(201);
  return r.body as { id: string; token: string; email: string; role: string; status: string };
}

describe("inviting and accepting", () => {
  it("when an owner invites, then 201 with the token once; the list shows it pending without a token; accepting gives a working key with the default scopes", async () => {
    const t = await f.tenant();
    const email = f.email();
    const before = Date.now();
    const created = await gw.post("/v1/invitations", { email, role: "admin" }, as(t.apiKey));
    expect(created.status, created.text).toBe(201);
    expect(created.body).toEqual({
      id: expect.stringMatching(/^inv_/),
      email,
      role: "admin",
      status: "pending",
      token: expect.stringMatching(/^invite_[A-Za-z0-9]{43}$/),
      expires_at: expect.any(String),
      created_at: expect.any(String),
    });
    expect(created.headers.get("location")).toBe(`/v1/invitations/${created.body.id}`);
    const week = Date.parse(created.body.expires_at) - before;
    expect(week).toBeGreaterThan(7 * 86_400_000 - 60_000);
    expect(week).toBeLessThan(7 * 86_400_000 + 60_000);
    const token: string = created.body.token;

    const listed = await gw.get("/v1/invitations", as(t.apiKey));
    expect(listed.status, listed.text).toBe(200);
    const { token: _shownOnce, ...withoutToken } = created.body;
    expect(listed.body.data).toEqual([withoutToken]);
    // Only its hash is stored, in the invitation and anywhere else in the keys schema's rows.
    const [stored] = await db`select row_to_json(i)::text as row from keys.invitations i where id = ${created.body.id}`;
    expect(stored?.["row"]).not.toContain(token.slice(7));
    const [recorded] = await db`select count(*)::int as n from keys.idempotency where result::text like ${`%${token.slice(7)}%`}`;
    expect(recorded?.["n"]).toBe(0);

    // No credential: the token is the authorization.
    const joined = await accept(token, "Ada's laptop");
    expect(joined.status, joined.text).toBe(201);
    expect(joined.body).toEqual({ organization_id: t.organizationId, user_id: expect.stringMatching(/^usr_/), api_key: expect.stringMatching(/^svc_live_/) });
    const members = await gw2.get("/v1/members", as(joined.body.api_key));
    expect(members.status, members.text).toBe(200);
    expect(members.body.data).toContainEqual(expect.objectContaining({ user_id: joined.body.user_id, email, role: "admin" }));
    const [key] = await db`select name, scopes from keys.api_keys where user_id = ${joined.body.user_id} and organization_id = ${t.organizationId}`;
    expect(key?.["name"]).toBe("Ada's laptop");
    expect(key?.["scopes"]).not.toContain("members:write");
    expect(key?.["scopes"]).not.toContain("api-keys:manage");
    expect(key?.["scopes"]).toContain("tasks:write");

    const after = await gw.get("/v1/invitations", as(t.apiKey));
    expect(after.body.data[0]).toMatchObject({ id: created.body.id, status: "accepted" });
  });

  it("when a user of another organization accepts, then they join with the user id they have", async () => {
    const t = await f.tenant();
    const elsewhere = await f.tenant();
    const inv = await invite(t, elsewhere.email.toUpperCase());
    const joined = await accept(inv.token);
    expect(joined.status, joined.text).toBe(201);
    expect(joined.body.user_id).toBe(elsewhere.userId);
    expect((await gw.get(`/v1/members/${elsewhere.userId}`, as(t.apiKey))).body.role).toBe("member");
    // Still an owner where they were.
    expect((await gw.get(`/v1/members/${elsewhere.userId}`, as(elsewhere.apiKey))).body.role).toBe("owner");
  });

  it("when the same Idempotency-Key is sent again, then the same body, token included, and no second invitation", async () => {
    const t = await f.tenant();
    const key = `invite-${randomBytes(6).toString("hex")}`;
    const body = { email: f.email(), role: "member" };
    const first = await gw.post("/v1/invitations", body, as(t.apiKey, key));
    expect(first.status, first.text).toBe(201);
    const again = await gw2.post("/v1/invitations", body, as(t.apiKey, key));
    expect(again.status, again.text).toBe(201);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get("idempotency-replayed")).toBe("true");
    const [count] = await db`select count(*)::int as n from keys.invitations where organization_id = ${t.organizationId}`;
    expect(count?.["n"]).toBe(1);
    const other = await gw.post("/v1/invitations", { ...body, role: "admin" }, as(t.apiKey, key));
    expect(other.status, other.text).toBe(422);
  });
});

describe("who may invite, and whom", () => {
  it("when an admin invites an owner, then 403; an owner may; a member may not invite at all", async () => {
    const t = await f.tenant();
    const admin = await f.user(t.organizationId, "admin");
    const m = await f.user(t.organizationId, "member");
    const byAdmin = await gw.post("/v1/invitations", { email: f.email(), role: "owner" }, as(await writer(t, admin.userId)));
    expect(byAdmin.status, byAdmin.text).toBe(403);
    expect(byAdmin.body).toMatchObject({ code: "insufficient_scope", detail: expect.stringContaining("Only an owner") });
    const adminInvite = await gw.post("/v1/invitations", { email: f.email(), role: "admin" }, as(await writer(t, admin.userId)));
    expect(adminInvite.status, adminInvite.text).toBe(201);
    const byOwner = await gw.post("/v1/invitations", { email: f.email(), role: "owner" }, as(t.apiKey));
    expect(byOwner.status, byOwner.text).toBe(201);
    expect((await accept(byOwner.body.token)).status).toBe(201);

    const byMember = await gw.post("/v1/invitations", { email: f.email(), role: "member" }, as(await writer(t, m.userId)));
    expect(byMember.status, byMember.text).toBe(403);
    expect(byMember.body.detail).toContain("owner or admin");
    // A default key lacks members:write; it may still read the invitations (members:read).
    const byKey = await gw.post("/v1/invitations", { email: f.email(), role: "member" }, as(m.apiKey));
    expect(byKey.status, byKey.text).toBe(403);
    expect(byKey.body.detail).toContain("members:write");
    const listed = await gw.get("/v1/invitations", as(m.apiKey));
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body.data).toHaveLength(2);
  });

  it("when the email is already a member's (in any case), then 409 already_member and no invitation", async () => {
    const t = await f.tenant();
    const m = await f.user(t.organizationId, "member");
    for (const email of [m.email, m.email.toUpperCase(), t.email]) {
      const r = await gw.post("/v1/invitations", { email, role: "member" }, as(t.apiKey));
      expect(r.status, r.text).toBe(409);
      expect(r.body.code).toBe("already_member");
    }
    // One who joined after being invited: accepting then is the same 409, and the invitation stays pending.
    const late = await invite(t, f.email());
    const added = await f.admin("addUser", { org: t.organizationId, email: late.email, role: "member" });
    const refused = await accept(late.token);
    expect(refused.status, refused.text).toBe(409);
    expect(refused.body.code).toBe("already_member");
    const [keys] = await db`select count(*)::int as n from keys.api_keys where user_id = ${added.user_id}`;
    expect(keys?.["n"]).toBe(1);
    expect((await gw.get("/v1/invitations", as(t.apiKey))).body.data[0].status).toBe("pending");
  });

  it("when the body is not valid, then 400 naming the field, and nothing is made", async () => {
    const t = await f.tenant();
    for (const [body, pointer] of [
      [{ email: "not an address", role: "member" }, "/email"],
      [{ email: f.email(), role: "boss" }, "/role"],
      [{ email: f.email() }, "/role"],
    ] as const) {
      const r = await gw.post("/v1/invitations", body, as(t.apiKey));
      expect(r.status, r.text).toBe(400);
      expect(r.body.errors.map((e: { pointer: string }) => e.pointer)).toContain(pointer);
    }
    for (const [body, pointer] of [
      [{ key_name: "x" }, "/token"],
      [{ token: "invite_x" }, "/key_name"],
      [{ token: "invite_x", key_name: " " }, "/key_name"],
    ] as const) {
      const r = await gw.post("/v1/invitations/accept", body);
      expect(r.status, r.text).toBe(400);
      expect(r.body.errors.map((e: { pointer: string }) => e.pointer)).toContain(pointer);
    }
    expect((await gw.get("/v1/invitations", as(t.apiKey))).body.data).toEqual([]);
  });
});

describe("pending invitations per organization", () => {
  it("when 100 are pending, then the 101st is 409 limit_reached and makes nothing; revoking one makes room, and expired ones do not count", async () => {
    const t = await f.tenant();
    const made = await Promise.all(Array.from({ length: 100 }, () => invite(t, f.email())));
    const over = await gw.post("/v1/invitations", { email: f.email(), role: "member" }, as(t.apiKey));
    expect(over.status, over.text).toBe(409);
    expect(over.body.code).toBe("limit_reached");
    const count = async () => Number((await db`select count(*)::int as n from keys.invitations where organization_id = ${t.organizationId}`)[0]?.["n"]);
    expect(await count()).toBe(100);
    expect((await gw.delete(`/v1/invitations/${made[0]?.id}`, as(t.apiKey))).status).toBe(200);
    await invite(t, f.email());
    await db`update keys.invitations set expires_at = now() - interval '1 second' where id = ${made[1]?.id ?? ""}`;
    await invite(t, f.email());
    expect((await gw.post("/v1/invitations", { email: f.email(), role: "member" }, as(t.apiKey))).status).toBe(409);
  });
});

describe("tokens that cannot be accepted", () => {
  it("when two accepts of one token arrive at the same moment, then one 201, one 404, and one key", async () => {
    for (let round = 0; round < 3; round++) {
      const t = await f.tenant();
      const inv = await invite(t, f.email());
      const answers = await Promise.all([accept(inv.token, "first", gw), accept(inv.token, "second", gw2)]);
      expect(answers.map((a) => a.status).sort(), answers.map((a) => a.text).join("\n")).toEqual([201, 404]);
      const joined = answers.find((a) => a.status === 201)?.body;
      const [keys] = await db`select count(*)::int as n from keys.api_keys where organization_id = ${t.organizationId} and user_id = ${joined.user_id}`;
      expect(keys?.["n"]).toBe(1);
    }
  });

  it("when the token is unknown, used, revoked or expired, then the same 404, and the list tells them apart", async () => {
    const t = await f.tenant();
    const used = await invite(t, f.email());
    expect((await accept(used.token)).status).toBe(201);
    const revoked = await invite(t, f.email());
    const revoke = await gw.delete(`/v1/invitations/${revoked.id}`, as(t.apiKey));
    expect(revoke.status, revoke.text).toBe(200);
    expect(revoke.body).toMatchObject({ id: revoked.id, status: "revoked" });
    const expired = await invite(t, f.email());
    await db`update keys.invitations set expires_at = now() - interval '1 second' where id = ${expired.id}`;

    const answers = await Promise.all(
      [`invite_${randomBytes(32).toString("hex").slice(0, 43)}`, used.token, revoked.token, expired.token].map((token) => accept(token)),
    );
    for (const r of answers) {
      expect(r.status, r.text).toBe(404);
      expect(r.body.code).toBe("resource_not_found");
      expect(r.body.detail).toBe(answers[0]?.body.detail);
    }
    const statuses = Object.fromEntries((await gw.get("/v1/invitations", as(t.apiKey))).body.data.map((i: { id: string; status: string }) => [i.id, i.status]));
    expect(statuses).toEqual({ [used.id]: "accepted", [revoked.id]: "revoked", [expired.id]: "expired" });
    // Revoking an accepted invitation leaves it accepted; revoking twice answers the same.
    expect((await gw.delete(`/v1/invitations/${used.id}`, as(t.apiKey))).body.status).toBe("accepted");
    expect((await gw.delete(`/v1/invitations/${revoked.id}`, as(t.apiKey))).body.status).toBe("revoked");
  });

  it("when a member revokes an invitation, then 403; another organization's invitation is 404", async () => {
    const t = await f.tenant();
    const m = await f.user(t.organizationId, "member");
    const inv = await invite(t, f.email());
    const byMember = await gw.delete(`/v1/invitations/${inv.id}`, as(await writer(t, m.userId)));
    expect(byMember.status, byMember.text).toBe(403);
    const stranger = await f.tenant();
    const foreign = await gw.delete(`/v1/invitations/${inv.id}`, as(stranger.apiKey));
    expect(foreign.status, foreign.text).toBe(404);
    expect((await accept(inv.token)).status).toBe(201);
  });
});

describe("the accept route's limit per client address (a gateway with the default INVITATION_ACCEPT_RATE_LIMIT)", () => {
  let limited: ReturnType<typeof api>;
  let stop: () => Promise<void>;
  beforeAll(async () => {
    const extra = await startExtraGateway(stack, {});
    limited = api(extra.url.toString());
    stop = extra.stop;
  });
  afterAll(async () => stop?.());

  it("when an address sends an 11th accept within a minute, then 429 with Retry-After, before the token is looked at; other routes are not counted", async () => {
    const t = await f.tenant();
    const inv = await invite(t, f.email());
    for (let i = 0; i < 10; i++) {
      const r = await accept(`invite_unknown${i}`, "guess", limited);
      expect(r.status, r.text).toBe(404);
      // Operations with a credential are limited per credential, not here.
      expect((await limited.get("/v1/invitations", as(t.apiKey))).status).toBe(200);
    }
    const refused = await accept(inv.token, "eleventh", limited);
    expect(refused.status, refused.text).toBe(429);
    expect(refused.body.code).toBe("rate_limited");
    const wait = Number(refused.headers.get("retry-after"));
    expect(wait).toBeGreaterThan(0);
    expect(wait).toBeLessThanOrEqual(60);
    // Refused before the keys service was asked: the invitation is still pending, and accepted elsewhere.
    expect((await gw.get("/v1/invitations", as(t.apiKey))).body.data[0].status).toBe("pending");
    expect((await accept(inv.token)).status).toBe(201);
  });
});
