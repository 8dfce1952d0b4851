import { randomBytes } from "node:crypto";
import { isAppError } from "@tasksvc/errors";
import { api, factories, gatewayUrl } from "@tasksvc/testing";
import { afterAll, describe, expect, inject, it } from "vitest";

const stack = inject("stack");
const gw = api(gatewayUrl(stack));
const f = factories(stack);
afterAll(() => f.close());

async function refusal(p: Promise<unknown>) {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  if (!isAppError(e)) throw new Error(`expected an AppError, got ${String(e)}`);
  return e;
}

describe("keys admin operations", () => {
  it("when bootstrap names an organization and owner that exist, then if_exists decides: absent creates, refuse refuses, reuse mints a key", async () => {
    const org = `CI ${randomBytes(3).toString("hex")}`;
    const email = f.email();
    const first = await f.admin("bootstrap", { org, plan: "pro", email });

    const e = await refusal(f.admin("bootstrap", { org, plan: "pro", email, if_exists: "refuse" }));
    expect(e.code).toBe("validation_failed");
    expect(e.detail).toContain(first.organization_id);
    expect(e.errors?.[0]?.pointer).toBe("/if_exists");

    const reused = await f.admin("bootstrap", { org, plan: "free", email: email.toUpperCase(), if_exists: "reuse" });
    expect(reused).toMatchObject({ organization_id: first.organization_id, user_id: first.user_id });
    expect(reused.api_key).not.toBe(first.api_key);
    // A fresh owner key with every scope; the plan is left as it was.
    const keys = await gw.get("/v1/api-keys", { token: reused.api_key });
    expect(keys.status, keys.text).toBe(200);
    expect((await gw.get("/v1/organizations", { token: reused.api_key })).body.data[0].plan).toBe("pro");

    // Without if_exists, as before: another organization.
    const twin = await f.admin("bootstrap", { org, plan: "pro", email });
    expect(twin.organization_id).not.toBe(first.organization_id);
    expect(twin.user_id).toBe(first.user_id);

    // Concurrent reuses of a new name: one organization.
    const fresh = `CI ${randomBytes(3).toString("hex")}`;
    const both = await Promise.all([1, 2, 3].map(() => f.admin("bootstrap", { org: fresh, plan: "pro", email, if_exists: "reuse" })));
    expect(new Set(both.map((b) => b.organization_id)).size).toBe(1);
  });

  it("when a member is removed, then their keys are revoked at once and the last owner cannot be removed", async () => {
    const t = await f.tenant();
    const m = await f.user(t.organizationId, "admin");
    const legacy = await f.admin("legacyKey", { org: t.organizationId, user: m.userId });
    expect((await gw.get("/v1/members", { token: m.apiKey })).status).toBe(200);

    expect(await f.admin("removeMember", { org: t.organizationId, user: m.userId })).toEqual({
      organization_id: t.organizationId,
      user_id: m.userId,
      revoked_keys: 2,
    });
    expect((await gw.get("/v1/members", { token: m.apiKey })).status).toBe(401);
    expect((await gw.get("/v1/members", { token: legacy.api_key })).status).toBe(401);
    const members = await gw.get("/v1/members", { token: t.apiKey });
    expect(members.body.data.map((x: { user_id: string }) => x.user_id)).toEqual([t.userId]);

    expect((await refusal(f.admin("removeMember", { org: t.organizationId, user: m.userId }))).code).toBe("resource_not_found");
    const last = await refusal(f.admin("removeMember", { org: t.organizationId, user: t.userId }));
    expect(last.code).toBe("last_owner");

    // With a second owner, the first may go.
    const o2 = await f.user(t.organizationId, "owner");
    await f.admin("removeMember", { org: t.organizationId, user: t.userId });
    expect((await gw.get("/v1/organizations", { token: o2.apiKey })).status).toBe(200);
    expect((await gw.get("/v1/organizations", { token: t.apiKey })).status).toBe(401);
  });
});
