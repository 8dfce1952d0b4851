import { randomUUID } from "node:crypto";
import { DEFAULT_KEY_SCOPES } from "@tasksvc/contracts";
import { e2eContext, type Tenant } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";
import { allAuditEvents, awaitAuditEvents } from "./audit-helpers.js";

// Who may read the audit log (scope audit:read and an owner or admin), and its filters.
const { gw, gw2, f } = e2eContext();

const as = (t: Tenant) => ({ token: t.apiKey });

async function ok(p: Promise<{ status: number; text: string; body: unknown }>, status: number): Promise<Record<string, string>> {
  const r = await p;
  expect(r.status, r.text).toBe(status);
  return r.body as Record<string, string>;
}

describe("GET /v1/audit-events: who may read it", () => {
  it("when new keys get the default scopes, then audit:read is not among them: it comes only when asked for", async () => {
    expect(DEFAULT_KEY_SCOPES).not.toContain("audit:read");
    const t = await f.tenant();
    const plain = await ok(gw.post("/v1/api-keys", { name: "default scopes" }, as(t)), 201);
    const refused = await gw.get("/v1/audit-events", { token: plain["key"] });
    expect(refused.status, refused.text).toBe(403);
    expect(refused.body.code).toBe("insufficient_scope");
    const asked = await ok(gw.post("/v1/api-keys", { name: "auditor", scopes: ["audit:read"] }, as(t)), 201);
    expect((await gw.get("/v1/audit-events", { token: asked["key"] })).status).toBe(200);
  });

  it("when a member's credential carries audit:read, then 403 insufficient_scope; an admin's reads the log", async () => {
    const t = await f.tenant();
    const member = await f.user(t.organizationId, "member");
    const memberToken = await f.token(t.organizationId, member.userId, ["audit:read"]);
    const refused = await gw.get("/v1/audit-events", { token: memberToken });
    expect(refused.status, refused.text).toBe(403);
    expect(refused.body.code).toBe("insufficient_scope");
    expect(refused.body.detail).toContain("owner or admin");
    const admin = await f.user(t.organizationId, "admin");
    const adminToken = await f.token(t.organizationId, admin.userId, ["audit:read"]);
    const read = await gw2.get("/v1/audit-events", { token: adminToken });
    expect(read.status, read.text).toBe(200);
  });

  it("when another organization's owner reads the log, then only their own organization's events come", async () => {
    const a = await f.tenant();
    const b = await f.tenant();
    const k = await ok(gw.post("/v1/api-keys", { name: "a's" }, as(a)), 201);
    await awaitAuditEvents(gw, a.apiKey, `target_id=${k["id"]}`, 1);
    expect(await allAuditEvents(gw, b.apiKey, `target_id=${k["id"]}`)).toEqual([]);
  });
});

describe("GET /v1/audit-events: filters", () => {
  it("when filtered by actions, actor, target and time, then only the matching events come, newest first", async () => {
    const t = await f.tenant();
    const k = await ok(gw.post("/v1/api-keys", { name: "second", scopes: ["projects:write"] }, as(t)), 201);
    // Each awaited in turn, so the log's order is the order of the changes.
    await awaitAuditEvents(gw, t.apiKey, `target_id=${k["id"]}`, 1);
    const l = await ok(gw.post("/v1/labels", { name: `l-${randomUUID()}` }, { token: k["key"] }), 201);
    await ok(gw.delete(`/v1/labels/${l["id"]}`, { token: k["key"] }), 200);
    // Services relay on their own: the chain's order is the order events reach it, so this one is awaited first.
    await awaitAuditEvents(gw, t.apiKey, "action=label.deleted", 1);
    await ok(gw.delete(`/v1/api-keys/${k["id"]}`, as(t)), 200);
    const all = await awaitAuditEvents(gw, t.apiKey, "", 5);
    expect(all.map((e) => e.sequence)).toEqual([5, 4, 3, 2, 1]);

    const keys = await allAuditEvents(gw, t.apiKey, "action=api_key.created,api_key.revoked");
    expect(keys.map((e) => e.action)).toEqual(["api_key.revoked", "api_key.created", "api_key.created"]);
    const repeated = await allAuditEvents(gw, t.apiKey, "action=api_key.revoked&action=label.deleted");
    expect(repeated.map((e) => e.action)).toEqual(["api_key.revoked", "label.deleted"]);

    const bySecondKey = await allAuditEvents(gw, t.apiKey, `actor_id=${k["id"]}`);
    expect(bySecondKey.map((e) => [e.action, e.target.id])).toEqual([["label.deleted", l["id"]]]);
    const aboutSecondKey = await allAuditEvents(gw, t.apiKey, `target_id=${k["id"]}`);
    expect(aboutSecondKey.map((e) => e.action)).toEqual(["api_key.revoked", "api_key.created"]);

    const third = all.find((e) => e.sequence === 3);
    const since = await allAuditEvents(gw, t.apiKey, `created_gte=${encodeURIComponent(third?.created_at ?? "")}`);
    expect(since.every((e) => e.created_at >= (third?.created_at ?? ""))).toBe(true);
    expect(since.map((e) => e.sequence)).toContain(3);
    const before = await allAuditEvents(gw, t.apiKey, `created_lt=${encodeURIComponent(third?.created_at ?? "")}`);
    expect(before.every((e) => e.created_at < (third?.created_at ?? ""))).toBe(true);
    expect(before.map((e) => e.sequence)).not.toContain(3);
    expect(await allAuditEvents(gw, t.apiKey, "created_lt=2000-01-01T00:00:00Z")).toEqual([]);
  });

  it("when a filter is malformed, then 400 naming the parameter", async () => {
    const t = await f.tenant();
    for (const [query, pointer] of [
      ["action=api_key.sold", "/action"],
      ["created_gte=yesterday", "/created_gte"],
      ["limit=1000", "/limit"],
      ["colour=red", "/colour"],
    ] as const) {
      const r = await gw.get(`/v1/audit-events?${query}`, as(t));
      expect(r.status, r.text).toBe(400);
      expect(r.headers.get("content-type")).toContain("application/problem+json");
      expect(JSON.stringify(r.body.errors), r.text).toContain(pointer);
    }
  });
});
