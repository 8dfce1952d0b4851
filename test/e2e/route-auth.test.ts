import { PLAN_DEFAULTS, PLANS, SCOPES } from "@tasksvc/contracts";
import { operations } from "@tasksvc/gateway";
import { e2eContext, eventually, itEnforcesAuth, type Tenant } from "@tasksvc/testing";
import { beforeAll, describe, expect, it } from "vitest";

/**
 * The security cases of every public operation, generated from the gateway's own operation table
 * (the one its router serves and its OpenAPI document describes), so an operation added tomorrow
 * gets them without anyone listing it: 401 without or with a bad credential, 403 without the
 * operation's scope, 403 on a plan without its entitlement, and 404 when another organization
 * names this one's resources. Each operation that takes a body must have a sample below: a new
 * one without fails its own test instead of being skipped.
 */
const { gw, f, db } = e2eContext();

/** A valid body per operation, for the cases where input must pass (404 of another organization). */
const SAMPLE_BODIES: Record<string, (ids: Ids) => unknown> = {
  "POST /v1/api-keys": () => ({ name: "route-auth" }),
  "PATCH /v1/members/:user_id": () => ({ role: "admin" }),
  "POST /v1/invitations": () => ({ email: "route-auth@example.com", role: "member" }),
  "POST /v1/oauth-clients": () => ({ name: "route-auth", scopes: ["tasks:read"] }),
  "POST /v1/tasks": () => ({ title: "route-auth" }),
  "PATCH /v1/tasks/:task_id": () => ({ title: "changed by another organization" }),
  "POST /v1/tasks/:task_id/dependencies": (ids) => ({ blocker_task_id: ids.blocker_task_id }),
  "POST /v1/tasks/:task_id/comments": () => ({ body: "from another organization" }),
  "PATCH /v1/tasks/:task_id/comments/:comment_id": () => ({ body: "changed by another organization" }),
  "POST /v1/projects": () => ({ name: "route-auth" }),
  "PATCH /v1/projects/:project_id": () => ({ description: "changed by another organization" }),
  "POST /v1/labels": () => ({ name: "route-auth" }),
  "PATCH /v1/labels/:label_id": () => ({ description: "changed by another organization" }),
  "POST /v1/custom-fields": () => ({ key: "route_auth", name: "route-auth", type: "text" }),
  "PATCH /v1/custom-fields/:field_id": () => ({ description: "changed by another organization" }),
  "PATCH /v1/daily-plan": () => ({ section: "TODO", status: "PLANNED" }),
  "POST /v1/daily-plan/entries": (ids) => ({ date: "2026-11-23", task_id: ids.task_id, section: "TODO" }),
  "POST /v1/webhook-endpoints": () => ({ url: "https://hooks.example.com/route-auth" }),
  "PATCH /v1/webhook-endpoints/:endpoint_id": () => ({ enabled: false }),
  "POST /v1/webhook-endpoints/:endpoint_id/test-event": () => ({ event_type: "task.created" }),
  "POST /v1/webhook-endpoints/:endpoint_id/replay-failed": () => ({ since: "2026-01-01T00:00:00Z" }),
  "POST /v1/tasks/:task_id/attachments/uploads": () => ({ file_name: "route-auth.txt", content_type: "text/plain", size: 4 }),
  "POST /v1/tasks/:task_id/attachments": () => ({ file_name: "route-auth.txt", file_key: "att/org_x/upl_x", content_type: "text/plain", size: 4 }),
  "POST /v1/exports": () => ({ format: "jsonl" }),
  "POST /v1/imports/uploads": () => ({ file_name: "route-auth.csv", content_type: "text/csv", size: 6 }),
  "POST /v1/imports": () => ({ file_key: "imp/org_x/upl_x", format: "csv" }),
  "POST /v1/rewinds": () => ({ match: { credential_id: "key_x", since: "2026-01-01T00:00:00Z" } }),
};
const SAMPLE_QUERIES: Record<string, string> = {
  "GET /v1/daily-plan": "?date=2026-11-23",
  "PATCH /v1/daily-plan": "?date=2026-11-23",
};

/** The owning organization's resources, one per path parameter any operation names. */
interface Ids {
  organization_id: string;
  key_id: string;
  task_id: string;
  blocker_task_id: string;
  project_id: string;
  label_id: string;
  field_id: string;
  entry_id: string;
  endpoint_id: string;
  delivery_id: string;
  attachment_id: string;
  comment_id: string;
  event_id: string;
  user_id: string;
  invitation_id: string;
  notification_id: string;
  export_id: string;
  import_id: string;
  oauth_client_id: string;
  rewind_id: string;
}
const PLACEHOLDER_IDS: Ids = {
  organization_id: "org_x",
  key_id: "key_x",
  task_id: "T-1",
  blocker_task_id: "T-2",
  project_id: "prj_x",
  label_id: "lbl_x",
  field_id: "fld_x",
  entry_id: "ent_x",
  endpoint_id: "whe_x",
  delivery_id: "whd_x",
  attachment_id: "att_x",
  comment_id: "cmt_x",
  event_id: "evt_x",
  user_id: "usr_x",
  invitation_id: "inv_x",
  notification_id: "ntf_x",
  export_id: "exp_x",
  import_id: "imp_x",
  oauth_client_id: "oac_x",
  rewind_id: "rwd_x",
};

const nameOf = (op: { method: string; url: string }) => `${op.method} ${op.url}`;
function pathOf(url: string, ids: Ids): string {
  return url.replace(/:([a-z_]+)/g, (_m, name: string) => {
    if (!(name in ids)) throw new Error(`no fixture for the path parameter :${name} (${url}): add one to Ids`);
    return encodeURIComponent(ids[name as keyof Ids]);
  });
}

describe("every operation refuses callers without a credential or its scope", () => {
  it("when the operation table is read, then it lists every public operation", () => {
    expect(operations.length).toBeGreaterThanOrEqual(26);
  });
  for (const op of operations) {
    const key = nameOf(op);
    itEnforcesAuth(
      () => gw,
      () => f,
      {
        method: op.method,
        path: pathOf(op.url, PLACEHOLDER_IDS) + (SAMPLE_QUERIES[key] ?? ""),
        scope: op.scope,
        ...(op.body ? { body: SAMPLE_BODIES[key]?.(PLACEHOLDER_IDS) ?? {} } : {}),
      },
    );
  }
});

describe("every operation is refused to a plan without its entitlement", () => {
  for (const op of operations) {
    const lacking = PLANS.filter((plan) => !PLAN_DEFAULTS[plan].entitlements.includes(op.entitlement));
    if (lacking.length === 0) {
      it(`when ${nameOf(op)} needs ${op.entitlement}, then every plan includes it (no plan can be refused)`, () => {
        expect(PLANS.every((plan) => PLAN_DEFAULTS[plan].entitlements.includes(op.entitlement))).toBe(true);
      });
    }
    for (const plan of lacking) {
      it(`when ${nameOf(op)} is called on the ${plan} plan, then 403 feature_not_enabled`, async () => {
        const t = await f.tenant(plan);
        const token = await f.token(t.organizationId, t.userId, [...SCOPES]);
        const r = await gw.request(op.method, pathOf(op.url, PLACEHOLDER_IDS), { token });
        expect(r.status, r.text).toBe(403);
        expect(r.body.code).toBe("feature_not_enabled");
      });
    }
  }
});

describe("every operation on a named resource answers 404 to another organization", () => {
  let owner: Tenant;
  let other: Tenant;
  let ids: Ids;

  beforeAll(async () => {
    owner = await f.tenant();
    other = await f.tenant();
    const as = { token: owner.apiKey };
    const key = await gw.post("/v1/api-keys", { name: "owned" }, as);
    const member = await f.user(owner.organizationId, "member");
    const invitation = await gw.post("/v1/invitations", { email: f.email(), role: "member" }, as);
    const oauthClient = await gw.post("/v1/oauth-clients", { name: "owned", scopes: ["tasks:read"] }, as);
    const task = await gw.post("/v1/tasks", { title: "owned", assignee_ids: [member.userId] }, as);
    const blocker = await gw.post("/v1/tasks", { title: "owned blocker" }, as);
    const project = await gw.post("/v1/projects", { name: "owned" }, as);
    const label = await gw.post("/v1/labels", { name: "owned" }, as);
    const field = await gw.post("/v1/custom-fields", { key: "owned", name: "owned", type: "text" }, as);
    // Tenants default to the pro plan, which has outbound_webhooks.
    const endpoint = await gw.post("/v1/webhook-endpoints", { url: "https://hooks.example.com/owned" }, as);
    for (const r of [key, task, blocker, project, label, field, endpoint, invitation, oauthClient]) expect(r.status, r.text).toBe(201);
    const linked = await gw.post(`/v1/tasks/${task.body.id}/dependencies`, { blocker_task_id: blocker.body.id }, as);
    expect(linked.status, linked.text).toBe(201);
    const entry = await gw.post("/v1/daily-plan/entries", { date: "2026-11-23", task_id: task.body.id, section: "TODO" }, as);
    expect(entry.status, entry.text).toBe(201);
    // A failed delivery of the owner's endpoint (written directly: the log routes need one; the
    // dispatcher never claims a FAILED row).
    const deliveryId = `whd_route_auth_${endpoint.body.id}`;
    await db`
      insert into webhooks.deliveries (id, organization_id, endpoint_id, event_id, event_type, payload, state, next_attempt_at)
      values (${deliveryId}, ${owner.organizationId}, ${endpoint.body.id}, ${`evt_${deliveryId}`}, 'task.created', '{}'::jsonb, 'FAILED', null)`;
    // An attachment of the owner's task, through both phases.
    const ticket = await gw.post(`/v1/tasks/${task.body.id}/attachments/uploads`, { file_name: "owned.txt", content_type: "text/plain", size: 5 }, as);
    expect(ticket.status, ticket.text).toBe(201);
    const put = await fetch(ticket.body.upload_url, { method: "PUT", body: "owned", headers: { "content-type": "text/plain" } });
    expect(put.status).toBe(200);
    const attachment = await gw.post(
      `/v1/tasks/${task.body.id}/attachments`,
      { file_name: "owned.txt", file_key: ticket.body.file_key, content_type: "text/plain", size: 5 },
      as,
    );
    expect(attachment.status, attachment.text).toBe(201);
    // An import of the owner's, from an uploaded file.
    const file = await gw.post("/v1/imports/uploads", { file_name: "owned.csv", content_type: "text/csv", size: 12 }, as);
    expect(file.status, file.text).toBe(201);
    expect((await fetch(file.body.upload_url, { method: "PUT", body: "title\nowned\n" })).status).toBe(200);
    const imported = await gw.post("/v1/imports", { file_key: file.body.file_key, format: "csv", dry_run: true }, as);
    expect(imported.status, imported.text).toBe(202);
    const comment = await gw.post(`/v1/tasks/${task.body.id}/comments`, { body: "owned" }, as);
    expect(comment.status, comment.text).toBe(201);
    const exported = await gw.post("/v1/exports", { format: "jsonl" }, as);
    expect(exported.status, exported.text).toBe(202);
    const rewind = await gw.post("/v1/rewinds", { match: { credential_id: owner.userId, since: "2026-01-01T00:00:00Z" } }, as);
    expect(rewind.status, rewind.text).toBe(200);
    // An event of the owner's (the feed has it once its change committed).
    const feed = await gw.get("/v1/events?limit=1", as);
    expect(feed.status, feed.text).toBe(200);
    // The member's notification of being assigned the task (written shortly after its event).
    const notification = await eventually(async () => (await gw.get("/v1/notifications", { token: member.apiKey })).body.data[0]?.id ?? false, {
      what: "the member's notification",
    });
    ids = {
      notification_id: notification,
      event_id: feed.body.data[0].id,
      organization_id: owner.organizationId,
      key_id: key.body.id,
      task_id: task.body.id,
      blocker_task_id: blocker.body.id,
      project_id: project.body.id,
      label_id: label.body.id,
      field_id: field.body.id,
      entry_id: entry.body.id,
      endpoint_id: endpoint.body.id,
      delivery_id: deliveryId,
      attachment_id: attachment.body.id,
      comment_id: comment.body.id,
      user_id: member.userId,
      invitation_id: invitation.body.id,
      export_id: exported.body.id,
      import_id: imported.body.id,
      oauth_client_id: oauthClient.body.id,
      rewind_id: rewind.body.id,
    };
    // Task numbers are per organization: the other one must have none, so "T-1" is not its own.
    expect((await gw.get("/v1/tasks", { token: other.apiKey })).body.data).toEqual([]);
  });

  const named = operations.filter((op) => op.url.includes("/:"));
  it("when the operation table is read, then operations on named resources exist", () => {
    expect(named.length).toBeGreaterThanOrEqual(14);
  });
  for (const op of named) {
    const key = nameOf(op);
    it(`when another organization calls ${key} with this organization's ids, then 404 resource_not_found`, async () => {
      const sample = SAMPLE_BODIES[key];
      if (op.body) expect(sample, `${key} takes a body: add a sample to SAMPLE_BODIES`).toBeDefined();
      const r = await gw.request(op.method, pathOf(op.url, ids) + (SAMPLE_QUERIES[key] ?? ""), {
        token: other.apiKey,
        ...(sample ? { body: sample(ids) } : {}),
      });
      expect(r.status, r.text).toBe(404);
      expect(r.body.code).toBe("resource_not_found");
    });
  }

  it("when every operation of the other organization has been refused, then the owner's resources are unchanged", async () => {
    const as = { token: owner.apiKey };
    const task = await gw.get(`/v1/tasks/${ids.task_id}`, as);
    expect(task.status, task.text).toBe(200);
    expect(task.body).toMatchObject({ title: "owned", archived: false });
    const history = await gw.get(`/v1/tasks/${ids.task_id}/history`, as);
    expect(history.body.data, history.text).toHaveLength(1);
    expect((await gw.get(`/v1/members/${ids.user_id}`, as)).body.role).toBe("member");
    const invitations = await gw.get("/v1/invitations", as);
    expect(invitations.body.data.map((i: { id: string; status: string }) => [i.id, i.status])).toEqual([[ids.invitation_id, "pending"]]);
    const deps = await gw.get(`/v1/tasks/${ids.task_id}/dependencies`, as);
    expect(deps.body.blocked_by.map((d: { task_id: string }) => d.task_id)).toEqual([ids.blocker_task_id]);
    const project = await gw.get(`/v1/projects/${ids.project_id}`, as);
    expect(project.body.description ?? null).toBeNull();
    const label = await gw.get(`/v1/labels/${ids.label_id}`, as);
    expect(label.body.description ?? null, label.text).toBeNull();
    const field = await gw.get(`/v1/custom-fields/${ids.field_id}`, as);
    expect(field.body.description ?? null, field.text).toBeNull();
    const keys = await gw.get("/v1/api-keys?limit=100", as);
    expect(keys.body.data.map((k: { id: string }) => k.id)).toContain(ids.key_id);
    const board = await gw.get("/v1/daily-plan?date=2026-11-23", as);
    expect(JSON.stringify(board.body)).toContain(ids.entry_id);
    const endpoint = await gw.get(`/v1/webhook-endpoints/${ids.endpoint_id}`, as);
    expect(endpoint.status, endpoint.text).toBe(200);
    expect(endpoint.body.enabled).toBe(true);
    // The fan-out adds rows for the owner's own task events; no replay of the delivery was made.
    const deliveries = await db`select id, state from webhooks.deliveries where id = ${ids.delivery_id} or replay_of = ${ids.delivery_id}`;
    expect(deliveries).toEqual([{ id: ids.delivery_id, state: "FAILED" }]);
    const attachments = await gw.get(`/v1/tasks/${ids.task_id}/attachments`, as);
    expect(attachments.body.data.map((a: { id: string }) => a.id)).toEqual([ids.attachment_id]);
    const [secrets] = await db`select previous_secret_sealed from webhooks.endpoints where id = ${ids.endpoint_id}`;
    expect(secrets?.["previous_secret_sealed"]).toBeNull();
  });
});
