import { spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { AUDIT_ACTIONS, type AuditAction, type AuditEvent } from "@tasksvc/contracts";
import { e2eContext, type Tenant } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";
import { allAuditEvents, awaitAuditEvents } from "./audit-helpers.js";

// Each audited action, done once through its public surface, gives exactly one audit event with
// its actor, target and request; a replay of an idempotent request gives none; no secret shows.
const { gw, f, stack } = e2eContext();
const CLI = fileURLToPath(new URL("../../tools/admin/dist/main.js", import.meta.url));
const UA = "audit-test/1.0";

interface Done {
  target: string;
  /** The actor id expected: the owner's bootstrap key unless said. */
  actorId?: string;
  actorType?: string;
  /** Sent again with the same Idempotency-Key. */
  replay?: () => Promise<unknown>;
  /** Whatever the response carried that must never reach the log. */
  secrets?: string[];
}

interface Ctx {
  t: Tenant;
  ownerKeyId: string;
  ik: () => Record<string, string>;
}

const as = (t: Tenant, headers: Record<string, string> = {}) => ({ token: t.apiKey, headers: { "user-agent": UA, ...headers } });

async function ok<T = Record<string, unknown>>(p: Promise<{ status: number; text: string; body: unknown }>, status = 200): Promise<T> {
  const r = await p;
  expect(r.status, r.text).toBe(status);
  return r.body as T;
}

async function endpoint(c: Ctx) {
  return ok<{ id: string; secret: string }>(gw.post("/v1/webhook-endpoints", { url: `https://hooks.example.com/${randomUUID()}` }, as(c.t)), 201);
}

async function inviteAndAccept(c: Ctx) {
  const inv = await ok<{ id: string; token: string }>(gw.post("/v1/invitations", { email: `inv-${randomUUID()}@example.test`, role: "member" }, as(c.t)), 201);
  const accepted = await ok<{ user_id: string; api_key: string }>(
    gw.post("/v1/invitations/accept", { token: inv.token, key_name: "laptop" }, { headers: { "user-agent": UA } }),
    201,
  );
  return { inv, accepted };
}

const ACTIONS: Array<[AuditAction, (c: Ctx) => Promise<Done>]> = [
  [
    "api_key.created",
    async (c) => {
      const headers = c.ik();
      const send = () => gw.post("/v1/api-keys", { name: "ci" }, as(c.t, headers));
      const k = await ok<{ id: string; key: string }>(send(), 201);
      return { target: k.id, replay: send, secrets: [k.key] };
    },
  ],
  [
    "api_key.revoked",
    async (c) => {
      const k = await ok<{ id: string; key: string }>(gw.post("/v1/api-keys", { name: "old" }, as(c.t)), 201);
      await ok(gw.delete(`/v1/api-keys/${k.id}`, as(c.t)));
      return { target: k.id, secrets: [k.key] };
    },
  ],
  [
    "member.added",
    async (c) => {
      const u = await f.user(c.t.organizationId, "member");
      return { target: u.userId, actorId: "system", actorType: "system", secrets: [u.apiKey] };
    },
  ],
  [
    "member.role_changed",
    async (c) => {
      const u = await f.user(c.t.organizationId, "member");
      await ok(gw.patch(`/v1/members/${u.userId}`, { role: "admin" }, as(c.t)));
      return { target: u.userId };
    },
  ],
  [
    "member.removed",
    async (c) => {
      const u = await f.user(c.t.organizationId, "member");
      await ok(gw.delete(`/v1/members/${u.userId}`, as(c.t)));
      return { target: u.userId };
    },
  ],
  [
    "invitation.created",
    async (c) => {
      const headers = c.ik();
      const send = () => gw.post("/v1/invitations", { email: `inv-${headers["idempotency-key"]}@example.test`, role: "admin" }, as(c.t, headers));
      const inv = await ok<{ id: string; token: string }>(send(), 201);
      return { target: inv.id, replay: send, secrets: [inv.token] };
    },
  ],
  [
    "invitation.accepted",
    async (c) => {
      const { inv, accepted } = await inviteAndAccept(c);
      return { target: inv.id, actorId: accepted.user_id, actorType: "user", secrets: [inv.token, accepted.api_key] };
    },
  ],
  [
    "invitation.revoked",
    async (c) => {
      const inv = await ok<{ id: string; token: string }>(
        gw.post("/v1/invitations", { email: `rev-${randomUUID()}@example.test`, role: "member" }, as(c.t)),
        201,
      );
      await ok(gw.delete(`/v1/invitations/${inv.id}`, as(c.t)));
      return { target: inv.id, secrets: [inv.token] };
    },
  ],
  [
    "webhook_endpoint.created",
    async (c) => {
      const headers = c.ik();
      const body = { url: `https://hooks.example.com/${headers["idempotency-key"]}` };
      const send = () => gw.post("/v1/webhook-endpoints", body, as(c.t, headers));
      const e = await ok<{ id: string; secret: string }>(send(), 201);
      return { target: e.id, replay: send, secrets: [e.secret] };
    },
  ],
  [
    "webhook_endpoint.updated",
    async (c) => {
      const e = await endpoint(c);
      await ok(gw.patch(`/v1/webhook-endpoints/${e.id}`, { event_types: ["task.created"] }, as(c.t)));
      return { target: e.id, secrets: [e.secret] };
    },
  ],
  [
    "webhook_endpoint.deleted",
    async (c) => {
      const e = await endpoint(c);
      await ok(gw.delete(`/v1/webhook-endpoints/${e.id}`, as(c.t)));
      return { target: e.id, secrets: [e.secret] };
    },
  ],
  [
    "webhook_endpoint.secret_rotated",
    async (c) => {
      const e = await endpoint(c);
      const headers = c.ik();
      const send = () => gw.post(`/v1/webhook-endpoints/${e.id}/rotate-secret`, undefined, as(c.t, headers));
      const rotated = await ok<{ secret: string }>(send());
      return { target: e.id, replay: send, secrets: [e.secret, rotated.secret] };
    },
  ],
  [
    "organization.plan_changed",
    async (c) => {
      await f.admin("setPlan", { org: c.t.organizationId, plan: "team" });
      return { target: c.t.organizationId, actorId: "system", actorType: "system" };
    },
  ],
  [
    "organization.limits_changed",
    async (c) => {
      await f.admin("setLimits", { org: c.t.organizationId, burst: 77 });
      return { target: c.t.organizationId, actorId: "system", actorType: "system" };
    },
  ],
  [
    "oauth_client.created",
    async (c) => {
      const headers = c.ik();
      const send = () => gw.post("/v1/oauth-clients", { name: "nightly", scopes: ["tasks:read"] }, as(c.t, headers));
      const client = await ok<{ id: string; client_secret: string }>(send(), 201);
      return { target: client.id, replay: send, secrets: [client.client_secret] };
    },
  ],
  [
    "oauth_client.deleted",
    async (c) => {
      const client = await ok<{ id: string; client_secret: string }>(gw.post("/v1/oauth-clients", { name: "gone", scopes: ["tasks:read"] }, as(c.t)), 201);
      await ok(gw.delete(`/v1/oauth-clients/${client.id}`, as(c.t)));
      return { target: client.id, secrets: [client.client_secret] };
    },
  ],
  [
    "label.deleted",
    async (c) => {
      const l = await ok<{ id: string }>(gw.post("/v1/labels", { name: `l-${randomUUID()}` }, as(c.t)), 201);
      await ok(gw.delete(`/v1/labels/${l.id}`, as(c.t)));
      return { target: l.id };
    },
  ],
  [
    "custom_field.deleted",
    async (c) => {
      const cf = await ok<{ id: string }>(gw.post("/v1/custom-fields", { key: "estimate", name: "Estimate", type: "number" }, as(c.t)), 201);
      await ok(gw.delete(`/v1/custom-fields/${cf.id}`, as(c.t)));
      return { target: cf.id };
    },
  ],
  [
    "export.created",
    async (c) => {
      const headers = c.ik();
      const send = () => gw.post("/v1/exports", { format: "jsonl" }, as(c.t, headers));
      const x = await ok<{ id: string }>(send(), 202);
      return { target: x.id, replay: send };
    },
  ],
  [
    "task.purged",
    async (c) => {
      const task = await ok<{ id: string }>(gw.post("/v1/tasks", { title: "to erase" }, as(c.t)), 201);
      await ok(gw.delete(`/v1/tasks/${task.id}`, as(c.t)));
      await ok(gw.delete(`/v1/trash/${task.id}`, as(c.t)));
      return { target: task.id };
    },
  ],
];

/** An audited change made and recorded after everything the action's service wrote before it. */
async function barrier(c: Ctx, action: AuditAction): Promise<void> {
  let made: { id: string; done: AuditAction };
  if (action.startsWith("webhook_endpoint.")) {
    const e = await endpoint(c);
    await ok(gw.delete(`/v1/webhook-endpoints/${e.id}`, as(c.t)));
    made = { id: e.id, done: "webhook_endpoint.deleted" };
  } else if (["label.", "custom_field.", "export.", "task."].some((p) => action.startsWith(p))) {
    const l = await ok<{ id: string }>(gw.post("/v1/labels", { name: `barrier-${randomUUID()}` }, as(c.t)), 201);
    await ok(gw.delete(`/v1/labels/${l.id}`, as(c.t)));
    made = { id: l.id, done: "label.deleted" };
  } else {
    const k = await ok<{ id: string }>(gw.post("/v1/api-keys", { name: "barrier" }, as(c.t)), 201);
    await ok(gw.delete(`/v1/api-keys/${k.id}`, as(c.t)));
    made = { id: k.id, done: "api_key.revoked" };
  }
  await awaitAuditEvents(gw, c.t.apiKey, `action=${made.done}&target_id=${made.id}`, 1);
}

async function tenantCtx(): Promise<Ctx> {
  const t = await f.tenant("pro");
  const ownerKeyId = (await awaitAuditEvents(gw, t.apiKey, "action=api_key.created", 1))[0]?.target.id as string;
  return { t, ownerKeyId, ik: () => ({ "idempotency-key": randomUUID() }) };
}

describe("GET /v1/audit-events: what is recorded", () => {
  it("when the contract's actions are listed, then each one is exercised below", () => {
    expect(ACTIONS.map(([a]) => a).sort()).toEqual([...AUDIT_ACTIONS].sort());
  });

  it.each(ACTIONS)("when %s is done once (and any idempotent request sent again), then exactly one event records it", async (action, act) => {
    const c = await tenantCtx();
    const done = await act(c);
    const [event] = await awaitAuditEvents(gw, c.t.apiKey, `action=${action}&target_id=${done.target}`, 1);
    expect(event).toMatchObject({
      action,
      target: { id: done.target },
      actor: { type: done.actorType ?? "api_key", id: done.actorId ?? c.ownerKeyId },
    });
    if ((done.actorType ?? "api_key") === "api_key") {
      expect(event?.actor.user_id).toBe(c.t.userId);
      expect(event?.user_agent).toBe(UA);
      expect(event?.ip).toMatch(/\S/);
      expect(event?.request_id).toMatch(/\S/);
    }
    if (done.replay) {
      const again = await done.replay();
      expect((again as { headers: Headers }).headers.get("idempotency-replayed"), JSON.stringify(again)).toBe("true");
    }
    // A later change through the same service's outbox, waited for, shows that nothing else is on its way.
    await barrier(c, action);
    const all = await allAuditEvents(gw, c.t.apiKey);
    expect(all.filter((e) => e.action === action && e.target.id === done.target)).toHaveLength(1);
    const text = JSON.stringify(all);
    for (const secret of [...(done.secrets ?? []), c.t.apiKey]) expect(text).not.toContain(secret);
    expect(text).not.toMatch(/whsec_|svc_live_|svc_test_/);
  });

  it("when an update changes fields, then changes holds each one's from and to; a role change names both roles", async () => {
    const c = await tenantCtx();
    const e = await endpoint(c);
    await ok(gw.patch(`/v1/webhook-endpoints/${e.id}`, { event_types: ["task.created"], enabled: false }, as(c.t)));
    const u = await f.user(c.t.organizationId, "member");
    await ok(gw.patch(`/v1/members/${u.userId}`, { role: "admin" }, as(c.t)));
    const [updated] = await awaitAuditEvents(gw, c.t.apiKey, `action=webhook_endpoint.updated&target_id=${e.id}`, 1);
    expect(updated?.changes).toEqual({ event_types: { from: [], to: ["task.created"] }, enabled: { from: true, to: false } });
    const [role] = await awaitAuditEvents(gw, c.t.apiKey, `action=member.role_changed&target_id=${u.userId}`, 1);
    expect(role?.changes).toEqual({ role: { from: "member", to: "admin" } });
  });

  it("when the admin CLI changes the plan, then the event's actor is the system (admin-cli), with no user", async () => {
    const c = await tenantCtx();
    const r = spawnSync(process.execPath, [CLI, "set-plan", "--org", c.t.organizationId, "--plan", "free", "--json"], {
      env: { PATH: process.env["PATH"], NATS_URL: stack.natsUrl, NATS_NAMESPACE: stack.namespace },
      encoding: "utf8",
      timeout: 20_000,
    });
    expect(r.status, r.stderr).toBe(0);
    const [event] = await awaitAuditEvents(gw, c.t.apiKey, "action=organization.plan_changed", 1);
    expect(event).toMatchObject({
      actor: { type: "system", id: "admin-cli", user_id: null },
      target: { type: "organization", id: c.t.organizationId },
      changes: { plan: { from: "pro", to: "free" } },
      ip: null,
      user_agent: null,
    });
  });

  it("when a bootstrap makes an organization, then its log starts at 1 with the owner's membership and key, the first event's prev_hash 64 zeros", async () => {
    const c = await tenantCtx();
    const events = (await awaitAuditEvents(gw, c.t.apiKey, "", 2)).reverse();
    // Both are written by one transaction; the chain numbers them in the order they reach it.
    expect(events.map((e: AuditEvent) => e.sequence)).toEqual([1, 2]);
    expect(events.map((e: AuditEvent) => e.action).sort()).toEqual(["api_key.created", "member.added"]);
    expect(events[0]?.prev_hash).toBe("0".repeat(64));
    expect(events.find((e) => e.action === "member.added")).toMatchObject({
      target: { type: "member", id: c.t.userId },
      changes: { role: { from: null, to: "owner" } },
    });
  });
});
