import { generateKeyPair, SignJWT } from "jose";
import { api, eventually, factories, gatewayUrl } from "@tasksvc/testing";
import { afterAll, describe, expect, inject, it } from "vitest";

const stack = inject("stack");
const gw = api(gatewayUrl(stack));
const f = factories(stack);
afterAll(() => f.close());

describe("authentication", () => {
  it("when the Authorization header is not a Bearer credential, then 401 missing_credentials", async () => {
    for (const header of ["Basic dXNlcjpwYXNz", "Bearer", "svc_live_abc"]) {
      const r = await gw.get("/v1/organizations", { headers: { authorization: header } });
      expect(r.status, r.text).toBe(401);
      expect(r.body.code).toBe("missing_credentials");
      expect(r.headers.get("www-authenticate")).toMatch(/^Bearer/);
    }
  });

  it("when an API key is unknown, then 401 invalid_api_key", async () => {
    const r = await gw.get("/v1/organizations", { token: "svc_live_unknownunknownunknownunknownunknown123" });
    expect(r.status, r.text).toBe(401);
    expect(r.body.code).toBe("invalid_api_key");
  });

  it("when the bearer token is not a JWT, then 401 invalid_token", async () => {
    const r = await gw.get("/v1/organizations", { token: "not-a-jwt" });
    expect(r.status, r.text).toBe(401);
    expect(r.body.code).toBe("invalid_token");
  });

  it("when an access token from the dev issuer is presented, then it acts as its user with its scopes", async () => {
    const t = await f.tenant();
    const token = await f.token(t.organizationId, t.userId, ["workspaces:read"]);
    const ok = await gw.get("/v1/organizations", { token });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.data[0].id).toBe(t.organizationId);
    const denied = await gw.get("/v1/members", { token });
    expect(denied.status, denied.text).toBe(403);
    expect(denied.body.code).toBe("insufficient_scope");
  });

  it("when a token is signed by another key with the same kid, then 401 invalid_token", async () => {
    const t = await f.tenant();
    const { privateKey } = await generateKeyPair("ES256");
    const forged = await new SignJWT({ org_id: t.organizationId, scope: "workspaces:read" })
      .setProtectedHeader({ alg: "ES256", kid: "dev-1" })
      .setIssuer("tasksvc-dev")
      .setAudience("tasksvc-api")
      .setSubject(t.userId)
      .setIssuedAt()
      .setExpirationTime("1h")
      .sign(privateKey);
    const r = await gw.get("/v1/organizations", { token: forged });
    expect(r.status, r.text).toBe(401);
    expect(r.body.code).toBe("invalid_token");
  });

  it("when an access token expires, then it is refused with invalid_token", async () => {
    const t = await f.tenant();
    // Expiry is in whole seconds from the second it was issued in: 2 leaves it at least one.
    const token = await f.token(t.organizationId, t.userId, ["workspaces:read"], 2);
    expect((await gw.get("/v1/organizations", { token })).status).toBe(200);
    // The gateway checks expiry on its own clock: polled until the second has passed.
    const r = await eventually(
      async () => {
        const refused = await gw.get("/v1/organizations", { token });
        expect(refused.status, refused.text).toBe(401);
        return refused;
      },
      { intervalMs: 100, what: "the token to expire" },
    );
    expect(r.body.code).toBe("invalid_token");
  });
});
