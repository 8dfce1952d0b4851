import { isAppError } from "@tasksvc/errors";
import { e2eContext, type Tenant } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";

// Members through the API (DESIGN.md section 12): read one, change a role, remove one or leave.
// The caller must be an owner or admin now (and hold members:write); only an owner grants or takes
// `owner`; the last owner stays one. A removed member's keys and tokens stop on the next request on
// every gateway replica, whatever those replicas had cached.
const { gw, gw2, f } = e2eContext();

const as = (token: string) => ({ token });
/** A credential of the user with members:write, which no key gets by default. */
const writer = (t: Tenant, userId: string) => f.token(t.organizationId, userId, ["members:read", "members:write", "tasks:read"]);
const ownersOf = async (t: Tenant) => {
  const page = await gw.get("/v1/members?limit=100", as(t.apiKey));
  expect(page.status, page.text).toBe(200);
  return page.body.data.filter((m: { role: string }) => m.role === "owner").map((m: { user_id: string }) => m.user_id);
};

describe("reading a member", () => {
  it("when a member is read, then 200 with the member; another organization's user and a former member answer the same 404", async () => {
    const t = await f.tenant();
    const m = await f.user(t.organizationId, "member");
    const other = await f.tenant();

    const read = await gw.get(`/v1/members/${m.userId}`, as(t.apiKey));
    expect(read.status, read.text).toBe(200);
    expect(read.body).toEqual({ user_id: m.userId, email: m.email, role: "member", created_at: expect.any(String) });
    // A member's own default key reads it too (members:read is a default scope).
    expect((await gw.get(`/v1/members/${t.userId}`, as(m.apiKey))).body.role).toBe("owner");

    const foreign = await gw.get(`/v1/members/${other.userId}`, as(t.apiKey));
    expect(foreign.status, foreign.text).toBe(404);
    expect(foreign.body.code).toBe("resource_not_found");

    const removed = await gw.delete(`/v1/members/${m.userId}`, as(t.apiKey));
    expect(removed.status, removed.text).toBe(200);
    expect(removed.body).toEqual({ user_id: m.userId });
    const former = await gw.get(`/v1/members/${m.userId}`, as(t.apiKey));
    expect(former.status, former.text).toBe(404);
    // Nothing tells a former member from a stranger but the id itself.
    expect(former.body.detail.replace(m.userId, "ID")).toBe(foreign.body.detail.replace(other.userId, "ID"));
  });
});

describe("changing a role", () => {
  it("when an owner makes a member an admin, then 200 the member, and the user may mint keys on the next request", async () => {
    const t = await f.tenant();
    const m = await f.user(t.organizationId, "member");
    const minter = await f.token(t.organizationId, m.userId, ["api-keys:manage"]);
    const before = await gw.post("/v1/api-keys", { name: "too early" }, as(minter));
    expect(before.status, before.text).toBe(403);

    const changed = await gw.patch(`/v1/members/${m.userId}`, { role: "admin" }, as(t.apiKey));
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body).toMatchObject({ user_id: m.userId, email: m.email, role: "admin" });
    expect((await gw2.get(`/v1/members/${m.userId}`, as(t.apiKey))).body.role).toBe("admin");
    const after = await gw2.post("/v1/api-keys", { name: "now allowed" }, as(minter));
    expect(after.status, after.text).toBe(201);
    // The same role again changes nothing and answers the member.
    expect((await gw.patch(`/v1/members/${m.userId}`, { role: "admin" }, as(t.apiKey))).body.role).toBe("admin");
  });

  it("when the credential lacks members:write, then 403 naming it; when the caller is a plain member, then 403 however the credential is scoped", async () => {
    const t = await f.tenant();
    const m = await f.user(t.organizationId, "member");
    const peer = await f.user(t.organizationId, "member");
    // A default key has no members:write.
    const byKey = await gw.patch(`/v1/members/${peer.userId}`, { role: "admin" }, as(m.apiKey));
    expect(byKey.status, byKey.text).toBe(403);
    expect(byKey.body).toMatchObject({ code: "insufficient_scope", detail: expect.stringContaining("members:write") });

    const token = await writer(t, m.userId);
    for (const r of [
      await gw.patch(`/v1/members/${peer.userId}`, { role: "admin" }, as(token)),
      await gw.patch(`/v1/members/${m.userId}`, { role: "admin" }, as(token)),
      await gw.delete(`/v1/members/${peer.userId}`, as(token)),
    ]) {
      expect(r.status, r.text).toBe(403);
      expect(r.body.code).toBe("insufficient_scope");
      expect(r.body.detail).toContain("owner or admin");
    }
    expect((await gw.get(`/v1/members/${peer.userId}`, as(t.apiKey))).body.role).toBe("member");
  });

  it("when an admin grants or takes owner, then 403 and nothing changes; an admin manages members and admins, an owner grants owner", async () => {
    const t = await f.tenant();
    // Two owners, so that the last-owner rule (checked first, for whoever asks) does not answer instead.
    const second = await f.user(t.organizationId, "owner");
    const admin = await f.user(t.organizationId, "admin");
    const m = await f.user(t.organizationId, "member");
    const token = await writer(t, admin.userId);

    for (const r of [
      await gw.patch(`/v1/members/${m.userId}`, { role: "owner" }, as(token)),
      await gw.patch(`/v1/members/${admin.userId}`, { role: "owner" }, as(token)),
      await gw.patch(`/v1/members/${t.userId}`, { role: "member" }, as(token)),
      await gw.delete(`/v1/members/${second.userId}`, as(token)),
    ]) {
      expect(r.status, r.text).toBe(403);
      expect(r.body).toMatchObject({ code: "insufficient_scope", detail: expect.stringContaining("Only an owner") });
    }
    expect((await ownersOf(t)).sort()).toEqual([t.userId, second.userId].sort());

    const promoted = await gw.patch(`/v1/members/${m.userId}`, { role: "admin" }, as(token));
    expect(promoted.status, promoted.text).toBe(200);
    const owner = await gw.patch(`/v1/members/${m.userId}`, { role: "owner" }, as(t.apiKey));
    expect(owner.status, owner.text).toBe(200);
    expect((await ownersOf(t)).sort()).toEqual([t.userId, second.userId, m.userId].sort());
  });

  it("when the body names no role or an unknown one, then 400 at /role and nothing changes", async () => {
    const t = await f.tenant();
    const m = await f.user(t.organizationId, "member");
    for (const body of [{}, { role: "boss" }, { role: "admin", extra: 1 }]) {
      const r = await gw.patch(`/v1/members/${m.userId}`, body, as(t.apiKey));
      expect(r.status, r.text).toBe(400);
      expect(r.body.code).toBe("validation_failed");
    }
    expect((await gw.get(`/v1/members/${m.userId}`, as(t.apiKey))).body.role).toBe("member");
  });
});

describe("the last owner", () => {
  it("when the last owner is demoted or removed (by themself or the admin CLI), then 409 last_owner and they stay owner", async () => {
    const t = await f.tenant();
    const demote = await gw.patch(`/v1/members/${t.userId}`, { role: "admin" }, as(t.apiKey));
    expect(demote.status, demote.text).toBe(409);
    expect(demote.body.code).toBe("last_owner");
    const leave = await gw.delete(`/v1/members/${t.userId}`, as(t.apiKey));
    expect(leave.status, leave.text).toBe(409);
    expect(leave.body.code).toBe("last_owner");
    for (const op of [
      () => f.admin("setRole", { org: t.organizationId, user: t.userId, role: "member" }),
      () => f.admin("removeMember", { org: t.organizationId, user: t.userId }),
      () => f.admin("addUser", { org: t.organizationId, email: t.email, role: "admin" }),
    ]) {
      const e = await op().then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(isAppError(e) && e.code, String(e)).toBe("last_owner");
    }
    expect(await ownersOf(t)).toEqual([t.userId]);
    expect((await gw.get("/v1/organizations", as(t.apiKey))).status).toBe(200);
  });

  it("when two owners demote each other at the same moment, then exactly one owner remains and the other request answers 409 last_owner", async () => {
    for (let round = 0; round < 3; round++) {
      const t = await f.tenant();
      const second = await f.user(t.organizationId, "owner");
      const [first, other] = [await writer(t, t.userId), await writer(t, second.userId)];
      const answers = await Promise.all([
        gw.patch(`/v1/members/${second.userId}`, { role: "member" }, as(first)),
        gw2.patch(`/v1/members/${t.userId}`, { role: "member" }, as(other)),
      ]);
      expect(answers.map((a) => a.status).sort(), answers.map((a) => a.text).join("\n")).toEqual([200, 409]);
      expect(answers.find((a) => a.status === 409)?.body.code).toBe("last_owner");
      const owners = await ownersOf(t);
      expect(owners).toHaveLength(1);
      expect([t.userId, second.userId]).toContain(owners[0]);
    }
  });

  it("when there is another owner, then an owner may step down or leave", async () => {
    const t = await f.tenant();
    const second = await f.user(t.organizationId, "owner");
    const down = await gw.patch(`/v1/members/${t.userId}`, { role: "admin" }, as(t.apiKey));
    expect(down.status, down.text).toBe(200);
    const token = await writer(t, second.userId);
    const left = await gw.delete(`/v1/members/${second.userId}`, as(token));
    expect(left.status, left.text).toBe(409);
    expect(left.body.code).toBe("last_owner");
    const back = await gw.patch(`/v1/members/${t.userId}`, { role: "owner" }, as(token));
    expect(back.status, back.text).toBe(200);
    expect((await gw.delete(`/v1/members/${second.userId}`, as(token))).status).toBe(200);
    expect(await ownersOf(t)).toEqual([t.userId]);
  });
});

describe("removing a member", () => {
  it("when a member removes themself (with members:write), then 200 and their key and token stop", async () => {
    const t = await f.tenant();
    const m = await f.user(t.organizationId, "member");
    const token = await writer(t, m.userId);
    const left = await gw.delete(`/v1/members/${m.userId}`, as(token));
    expect(left.status, left.text).toBe(200);
    expect(left.body).toEqual({ user_id: m.userId });
    expect((await gw.get("/v1/members", as(token))).body.code).toBe("invalid_token");
    expect((await gw.get("/v1/members", as(m.apiKey))).body.code).toBe("invalid_api_key");
  });

  it("when a member is removed, then their key and token are refused on the next request on both gateway replicas, though cached there just before; their tasks stay", async () => {
    const t = await f.tenant();
    const m = await f.user(t.organizationId, "member");
    const token = await f.token(t.organizationId, m.userId, ["tasks:read", "tasks:write"]);
    const task = await gw.post("/v1/tasks", { title: "Stays after its owner leaves" }, as(m.apiKey));
    expect(task.status, task.text).toBe(201);
    // Each replica authenticates both credentials now, and keeps their identities for a few seconds.
    for (const g of [gw, gw2]) {
      for (const credential of [m.apiKey, token]) expect((await g.get(`/v1/tasks/${task.body.id}`, as(credential))).status).toBe(200);
    }

    const removed = await gw.delete(`/v1/members/${m.userId}`, as(t.apiKey));
    expect(removed.status, removed.text).toBe(200);

    for (const g of [gw2, gw]) {
      const byKey = await g.get(`/v1/tasks/${task.body.id}`, as(m.apiKey));
      expect(byKey.status, byKey.text).toBe(401);
      expect(byKey.body.code).toBe("invalid_api_key");
      const byToken = await g.get(`/v1/tasks/${task.body.id}`, as(token));
      expect(byToken.status, byToken.text).toBe(401);
      expect(byToken.body.code).toBe("invalid_token");
    }
    const kept = await gw.get(`/v1/tasks/${task.body.id}`, as(t.apiKey));
    expect(kept.status, kept.text).toBe(200);
    expect(kept.body.title).toBe("Stays after its owner leaves");
    const again = await gw.delete(`/v1/members/${m.userId}`, as(t.apiKey));
    expect(again.status, again.text).toBe(404);
  });

  it("when the tasks service asks which users are current members, then a removed one and another organization's are left out", async () => {
    const t = await f.tenant();
    const [stays, leaves] = [await f.user(t.organizationId), await f.user(t.organizationId)];
    const stranger = await f.tenant();
    expect((await gw.delete(`/v1/members/${leaves.userId}`, as(t.apiKey))).status).toBe(200);
    const asked = [stays.userId, leaves.userId, stranger.userId, t.userId, "usr_unknown"];
    const { user_ids } = await f.admin("currentMembers", { organization_id: t.organizationId, user_ids: asked });
    expect([...user_ids].sort()).toEqual([stays.userId, t.userId].sort());
  });

  it("when an admin removes another admin or a member, then 200; another organization's user answers 404", async () => {
    const t = await f.tenant();
    const admin = await f.user(t.organizationId, "admin");
    const other = await f.user(t.organizationId, "admin");
    const m = await f.user(t.organizationId, "member");
    const stranger = await f.tenant();
    const token = await writer(t, admin.userId);
    for (const userId of [other.userId, m.userId]) {
      const r = await gw.delete(`/v1/members/${userId}`, as(token));
      expect(r.status, r.text).toBe(200);
    }
    const foreign = await gw.delete(`/v1/members/${stranger.userId}`, as(token));
    expect(foreign.status, foreign.text).toBe(404);
    expect(foreign.body.code).toBe("resource_not_found");
    expect((await gw.get("/v1/organizations", as(stranger.apiKey))).status).toBe(200);
  });
});
