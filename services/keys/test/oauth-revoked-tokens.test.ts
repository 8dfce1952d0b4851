import { createDb, newId } from "@tasksvc/db";
import { api, factories, gatewayUrl } from "@tasksvc/testing";
import { afterAll, describe, expect, inject, it } from "vitest";
import { keysRepo } from "../src/repo/keys-repo.js";

const stack = inject("stack");
const gw = api(gatewayUrl(stack));
const f = factories(stack);
const db = createDb({ url: stack.databaseUrl, schema: "keys", max: 2 });
const repo = keysRepo(db.sql);
afterAll(async () => {
  await f.close();
  await db.end({ timeout: 1 });
});

async function client(): Promise<{ orgId: string; clientId: string }> {
  const t = await f.tenant();
  const r = await gw.post("/v1/oauth-clients", { name: "revoking", scopes: ["tasks:read"] }, { token: t.apiKey });
  expect(r.status, r.text).toBe(201);
  return { orgId: t.organizationId, clientId: r.body.client_id };
}

describe("revoked tokens of OAuth clients", () => {
  it("when the sweep runs, then the ids of revoked tokens past their expiry are gone and the others stay", async () => {
    const { orgId, clientId } = await client();
    const [expired, live] = [newId("oat"), newId("oat")];
    expect(await repo.revokeToken({ clientId, orgId, jti: expired, expiresAt: new Date(Date.now() - 10 * 60_000) })).toBe(true);
    expect(await repo.revokeToken({ clientId, orgId, jti: live, expiresAt: new Date(Date.now() + 60 * 60_000) })).toBe(true);
    expect(await repo.sweepRevokedTokens()).toBeGreaterThanOrEqual(1);
    const left = await db.sql<{ jti: string }[]>`select jti from oauth_revoked_tokens where jti in (${expired}, ${live})`;
    expect(left.map((r) => r.jti)).toEqual([live]);
  });

  it("when a token is revoked twice, or named with another organization's client, then nothing more is recorded", async () => {
    const { orgId, clientId } = await client();
    const other = await client();
    const jti = newId("oat");
    const until = new Date(Date.now() + 60 * 60_000);
    expect(await repo.revokeToken({ clientId, orgId, jti, expiresAt: until })).toBe(true);
    expect(await repo.revokeToken({ clientId, orgId, jti, expiresAt: until })).toBe(false);
    expect(await repo.revokeToken({ clientId: other.clientId, orgId, jti: newId("oat"), expiresAt: until })).toBe(false);
  });
});
