import { randomUUID } from "node:crypto";
import { e2eContext, type Tenant } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";

// The bounds on webhook fan-out: a plan limit on endpoints per organization (set-limits
// --webhook-endpoints), and one endpoint per URL in an organization.
const { gw, gw2, f, db } = e2eContext();

const create = (t: Tenant, url: string, headers: Record<string, string> = {}, via = gw) =>
  via.post("/v1/webhook-endpoints", { url }, { token: t.apiKey, headers });
const fresh = () => `https://hooks.example.com/${randomUUID()}`;
const countOf = async (orgId: string) => (await db`select 1 from webhooks.endpoints where organization_id = ${orgId}`).length;

describe("the plan's cap on webhook endpoints", () => {
  it("when the organization is at its cap, then a create is 400 validation_failed naming the body; deleting one makes room again", async () => {
    const t = await f.tenant("pro");
    const made: string[] = [];
    for (let i = 0; i < 16; i++) {
      const r = await create(t, fresh());
      expect(r.status, r.text).toBe(201);
      made.push(r.body.id);
    }
    // Disabled endpoints count too: re-enabling one must not pass the cap.
    expect((await gw.patch(`/v1/webhook-endpoints/${made[0]}`, { enabled: false }, { token: t.apiKey })).status).toBe(200);
    const over = await create(t, fresh());
    expect(over.status, over.text).toBe(400);
    expect(over.body).toMatchObject({ code: "validation_failed", errors: [{ pointer: "/", message: expect.stringContaining("allows 16") }] });
    expect(over.body.detail).toContain("limit of webhook endpoints (16)");
    expect(await countOf(t.organizationId)).toBe(16);

    expect((await gw.delete(`/v1/webhook-endpoints/${made[1]}`, { token: t.apiKey })).status).toBe(200);
    const again = await create(t, fresh());
    expect(again.status, again.text).toBe(201);
    expect(await countOf(t.organizationId)).toBe(16);
  });

  it("when set-limits raises or lowers the cap, then creates follow it; /v1/usage shows it", async () => {
    const t = await f.tenant("team");
    await f.admin("setLimits", { org: t.organizationId, webhook_endpoints: 1 });
    expect((await create(t, fresh())).status).toBe(201);
    const refused = await create(t, fresh());
    expect(refused.status, refused.text).toBe(400);
    expect((await gw.get("/v1/usage", { token: t.apiKey })).body.webhook_endpoints_allowance).toBe(1);

    const raised = await f.admin("setLimits", { org: t.organizationId, webhook_endpoints: 2 });
    expect(raised.limits.webhook_endpoints).toBe(2);
    expect((await create(t, fresh())).status).toBe(201);
    expect((await create(t, fresh())).status).toBe(400);
    const usage = await gw.get("/v1/usage", { token: t.apiKey });
    expect(usage.status, usage.text).toBe(200);
    expect(usage.body.webhook_endpoints_allowance).toBe(2);
  });

  it("when read by plan, then /v1/usage shows 16 for pro and team and 0 for free", async () => {
    for (const [plan, allowance] of [
      ["pro", 16],
      ["team", 16],
      ["free", 0],
    ] as const) {
      const t = await f.tenant(plan);
      const u = await gw.get("/v1/usage", { token: t.apiKey });
      expect(u.status, u.text).toBe(200);
      expect(u.body.webhook_endpoints_allowance, plan).toBe(allowance);
    }
  });

  it("when many creates race at the cap through two gateways, then exactly the cap's number are made", async () => {
    const t = await f.tenant("pro");
    await f.admin("setLimits", { org: t.organizationId, webhook_endpoints: 3 });
    expect((await create(t, fresh())).status).toBe(201);
    const raced = await Promise.all(Array.from({ length: 12 }, (_, i) => create(t, fresh(), {}, i % 2 === 0 ? gw : gw2)));
    const statuses = raced.map((r) => r.status).sort();
    expect(statuses, raced.map((r) => r.text).join("\n")).toEqual([201, 201, ...Array<number>(10).fill(400)]);
    expect(await countOf(t.organizationId)).toBe(3);
  });

  it("when a refused create is sent again with its Idempotency-Key after room was made, then the refusal is replayed", async () => {
    const t = await f.tenant("pro");
    await f.admin("setLimits", { org: t.organizationId, webhook_endpoints: 1 });
    const first = await create(t, fresh());
    expect(first.status, first.text).toBe(201);
    const url = fresh();
    const headers = { "idempotency-key": `cap-${randomUUID()}` };
    const refused = await create(t, url, headers);
    expect(refused.status, refused.text).toBe(400);
    expect((await gw.delete(`/v1/webhook-endpoints/${first.body.id}`, { token: t.apiKey })).status).toBe(200);
    const replay = await create(t, url, headers, gw2);
    expect(replay.status, replay.text).toBe(400);
    expect(replay.headers.get("idempotency-replayed")).toBe("true");
    expect(replay.body).toEqual(refused.body);
    expect(await countOf(t.organizationId)).toBe(0);
  });
});

describe("one endpoint per URL in an organization", () => {
  it("when a URL is created twice, also spelled differently, then the second is 400 naming /url; another organization may use it", async () => {
    const t = await f.tenant();
    const first = await create(t, "https://Hooks.Example.com:443/a/../tasks");
    expect(first.status, first.text).toBe(201);
    // Stored as a URL parser writes it: host in lower case, default port and dot segments gone.
    expect(first.body.url).toBe("https://hooks.example.com/tasks");
    for (const url of ["https://hooks.example.com/tasks", "HTTPS://HOOKS.EXAMPLE.COM/tasks"]) {
      const r = await create(t, url);
      expect(r.status, `${url} → ${r.text}`).toBe(400);
      expect(r.body).toMatchObject({ code: "validation_failed", errors: [{ pointer: "/url", message: expect.stringContaining("has this URL") }] });
    }
    // The path, the query and the trailing slash are part of the URL: these are other endpoints.
    for (const url of ["https://hooks.example.com/Tasks", "https://hooks.example.com/tasks/", "https://hooks.example.com/tasks?a=1"]) {
      expect((await create(t, url)).status, url).toBe(201);
    }
    const other = await f.tenant();
    const theirs = await create(other, "https://hooks.example.com/tasks");
    expect(theirs.status, theirs.text).toBe(201);
  });

  it("when PATCH moves an endpoint to a URL another endpoint has, then 400 naming /url and nothing changes", async () => {
    const t = await f.tenant();
    const a = (await create(t, "https://hooks.example.com/a")).body;
    const b = (await create(t, "https://hooks.example.com/b")).body;
    for (const body of [{ url: "https://hooks.example.com/a" }, { url: "https://HOOKS.example.com/a", enabled: false }]) {
      const r = await gw.patch(`/v1/webhook-endpoints/${b.id}`, body, { token: t.apiKey });
      expect(r.status, r.text).toBe(400);
      expect(r.body.errors).toEqual([expect.objectContaining({ pointer: "/url" })]);
    }
    const got = await gw.get(`/v1/webhook-endpoints/${b.id}`, { token: t.apiKey });
    expect(got.body).toMatchObject({ url: "https://hooks.example.com/b", enabled: true });
    // Its own URL again is no conflict.
    const same = await gw.patch(`/v1/webhook-endpoints/${b.id}`, { url: "https://hooks.example.com/b" }, { token: t.apiKey });
    expect(same.status, same.text).toBe(200);
    const moved = await gw.patch(`/v1/webhook-endpoints/${a.id}`, { url: "https://hooks.example.com/c" }, { token: t.apiKey });
    expect(moved.status, moved.text).toBe(200);
    expect((await gw.patch(`/v1/webhook-endpoints/${b.id}`, { url: "https://hooks.example.com/a" }, { token: t.apiKey })).status).toBe(200);
  });

  it("when two creates of one URL race, then one is made and the other is 400 naming /url", async () => {
    const t = await f.tenant();
    const url = fresh();
    const raced = await Promise.all([create(t, url), create(t, url, {}, gw2), create(t, url), create(t, url, {}, gw2)]);
    expect(raced.map((r) => r.status).sort(), raced.map((r) => r.text).join("\n")).toEqual([201, 400, 400, 400]);
    for (const r of raced.filter((x) => x.status === 400)) expect(r.body.errors?.[0]?.pointer).toBe("/url");
    expect(await countOf(t.organizationId)).toBe(1);
  });
});
