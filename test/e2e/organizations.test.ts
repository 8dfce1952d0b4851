import { api, factories, gatewayUrl } from "@tasksvc/testing";
import postgres from "postgres";
import { afterAll, describe, expect, inject, it } from "vitest";

const stack = inject("stack");
const gw = api(gatewayUrl(stack));
const gw2 = api(stack.gatewayUrls[1] ?? gatewayUrl(stack));
const f = factories(stack);
const sql = postgres(stack.databaseUrl, { max: 1, onnotice: () => {} });
afterAll(async () => {
  await f.close();
  await sql.end({ timeout: 1 });
});

// The gateway answers the credential's own organization from the identity it authenticated with.
describe("the credential's organization, as fresh as its identity", () => {
  it("when the plan changes, then every replica answers the new plan at once, in the bytes of the organization's row", async () => {
    const t = await f.tenant("team");
    for (const g of [gw, gw2]) {
      const r = await g.get("/v1/organizations", { token: t.apiKey });
      expect(r.body.data[0].plan, r.text).toBe("team");
    }
    await f.admin("setPlan", { org: t.organizationId, plan: "pro" });
    const [row] = await sql<{ id: string; name: string; plan: string; created_at: string }[]>`
      select id, name, plan, to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as created_at
      from keys.organizations where id = ${t.organizationId}`;
    const org = JSON.stringify({ id: row?.id, name: row?.name, plan: row?.plan, created_at: row?.created_at });
    expect(row?.plan).toBe("pro");
    for (const g of [gw, gw2]) {
      const list = await g.get("/v1/organizations", { token: t.apiKey });
      expect(list.text).toBe(`{"data":[${org}],"has_more":false,"next_cursor":null}`);
      const one = await g.get(`/v1/organizations/${t.organizationId}`, { token: t.apiKey });
      expect(one.text).toBe(org);
    }
  });
});

describe("GET /v1/organizations", () => {
  it("when listing, then exactly the credential's organization comes back as one page", async () => {
    const t = await f.tenant("team");
    await f.tenant();
    const r = await gw.get("/v1/organizations", { token: t.apiKey });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toEqual({
      data: [{ id: t.organizationId, name: expect.any(String), plan: "team", created_at: expect.stringMatching(/Z$/) }],
      has_more: false,
      next_cursor: null,
    });
  });
});

describe("GET /v1/organizations/{id}", () => {
  it("when the id is the credential's organization, then 200 with it", async () => {
    const t = await f.tenant();
    const r = await gw.get(`/v1/organizations/${t.organizationId}`, { token: t.apiKey });
    expect(r.status, r.text).toBe(200);
    expect(r.body.id).toBe(t.organizationId);
  });

  it("when the id is another organization's or unknown, then the same 404 resource_not_found", async () => {
    const a = await f.tenant();
    const b = await f.tenant();
    const other = await gw.get(`/v1/organizations/${b.organizationId}`, { token: a.apiKey });
    const unknown = await gw.get(`/v1/organizations/org_nope`, { token: a.apiKey });
    for (const r of [other, unknown]) {
      expect(r.status, r.text).toBe(404);
      expect(r.body.code).toBe("resource_not_found");
    }
    // No cross-organization existence can be observed: the bodies differ only by the id echoed.
    expect(other.body.detail.replace(b.organizationId, "ID")).toBe(unknown.body.detail.replace("org_nope", "ID"));
  });
});

describe("GET /v1/members", () => {
  it("when listing, then the organization's members with roles appear, oldest first, paginated", async () => {
    const t = await f.tenant();
    const admin = await f.user(t.organizationId, "admin");
    const member = await f.user(t.organizationId, "member");
    const outsider = await f.tenant();
    const all = await gw.get("/v1/members", { token: t.apiKey });
    expect(all.status, all.text).toBe(200);
    expect(all.body.data.map((m: { user_id: string; role: string }) => [m.user_id, m.role])).toEqual([
      [t.userId, "owner"],
      [admin.userId, "admin"],
      [member.userId, "member"],
    ]);
    expect(all.body.data.some((m: { user_id: string }) => m.user_id === outsider.userId)).toBe(false);
    expect(all.body.data[0]).toEqual({ user_id: t.userId, email: t.email, role: "owner", created_at: expect.any(String) });

    const p1 = await gw.get("/v1/members?limit=2", { token: t.apiKey });
    expect(p1.body).toMatchObject({ has_more: true });
    const p2 = await gw.get(`/v1/members?limit=2&after=${encodeURIComponent(p1.body.next_cursor)}`, { token: t.apiKey });
    expect(p2.body.data.map((m: { user_id: string }) => m.user_id)).toEqual([member.userId]);
    expect(p2.body).toMatchObject({ has_more: false, next_cursor: null });
  });

  it("when the cursor is garbage, then 400 with pointer /after", async () => {
    const t = await f.tenant();
    const r = await gw.get("/v1/members?after=bm90LWEtY3Vyc29y", { token: t.apiKey });
    expect(r.status, r.text).toBe(400);
    expect(r.body.errors[0].pointer).toBe("/after");
  });
});
