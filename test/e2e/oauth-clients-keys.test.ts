import { api, e2eContext, startExtraGateway } from "@tasksvc/testing";
import { exportJWK, exportSPKI, generateKeyPair, SignJWT } from "jose";
import { afterAll, describe, expect, it } from "vitest";
import { basicAuth, makeClient, postForm, tokenFor } from "./oauth-helpers.js";

// DESIGN section 17: the discovery documents, signing keys and their rotation, the external
// issuer beside ours, and the per-address bound of the OAuth endpoints.
const { gw, f, stack } = e2eContext();
const ISSUER = "http://tasksvc.test";
const stops: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const s of stops) await s();
});

async function gateway(settings: Record<string, string>) {
  const g = await startExtraGateway(stack, { OAUTH_TOKEN_ISSUER: ISSUER, ...settings });
  stops.push(g.stop);
  return api(g.url.toString());
}

async function privateJwk(kid: string): Promise<Record<string, unknown>> {
  const { privateKey } = await generateKeyPair("ES256", { extractable: true });
  return { ...(await exportJWK(privateKey)), kid };
}

describe("discovery", () => {
  it("when the metadata is read, then it names our issuer, the three endpoints on this gateway, the key set, the one grant and both client authentications (RFC 8414)", async () => {
    const r = await gw.get("/.well-known/oauth-authorization-server");
    expect(r.status, r.text).toBe(200);
    expect(r.headers.get("cache-control")).toBe("public, max-age=300");
    const base = stack.gatewayUrls[0]?.replace("127.0.0.1", "localhost");
    expect(r.body).toMatchObject({
      issuer: ISSUER,
      token_endpoint: `${base}/oauth/token`,
      revocation_endpoint: `${base}/oauth/revoke`,
      introspection_endpoint: `${base}/oauth/introspect`,
      jwks_uri: `${base}/.well-known/jwks.json`,
      grant_types_supported: ["client_credentials"],
      token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post"],
      scopes_supported: expect.arrayContaining(["tasks:read", "api-keys:manage"]),
    });
  });

  it("when the key set is read, then it holds the public half of the signing key, and a token's kid is in it", async () => {
    const r = await gw.get("/.well-known/jwks.json");
    expect(r.status, r.text).toBe(200);
    expect(r.body.keys).toEqual([{ kty: "EC", crv: "P-256", x: expect.any(String), y: expect.any(String), kid: "dev-oauth-1", alg: "ES256", use: "sig" }]);
  });
});

describe("signing keys and their rotation", () => {
  it("when a gateway signs with the older of two keys and another lists both, then its tokens verify there; once the old key is removed, they are refused", async () => {
    const [older, newer] = [await privateJwk("older"), await privateJwk("newer")];
    const beforeRotation = await gateway({ OAUTH_SIGNING_KEYS: JSON.stringify([older]) });
    const during = await gateway({ OAUTH_SIGNING_KEYS: JSON.stringify([newer, older]) });
    const after = await gateway({ OAUTH_SIGNING_KEYS: JSON.stringify([newer]) });
    const t = await f.tenant();
    const c = await makeClient(gw, t, ["tasks:read"]);
    const old = await tokenFor(beforeRotation, c);
    const fresh = await tokenFor(during, c);
    expect((await during.get("/.well-known/jwks.json")).body.keys.map((k: { kid: string }) => k.kid)).toEqual(["newer", "older"]);
    for (const token of [old, fresh]) expect((await during.get("/v1/tasks", { token })).status).toBe(200);
    expect((await after.get("/v1/tasks", { token: fresh })).status).toBe(200);
    const refused = await after.get("/v1/tasks", { token: old });
    expect(refused.status, refused.text).toBe(401);
    expect(refused.body.code).toBe("invalid_token");
    // Introspection there says the same.
    expect((await postForm(after, "/oauth/introspect", { token: old }, { authorization: basicAuth(c.client_id, c.client_secret) })).body).toEqual({
      active: false,
    });
    // And a gateway with the development key knows neither.
    expect((await gw.get("/v1/tasks", { token: old })).status).toBe(401);
  });

  it("when our own issuer would be the external issuer's name, then the gateway does not start", async () => {
    await expect(startExtraGateway(stack, { OAUTH_TOKEN_ISSUER: "tasksvc-dev" })).rejects.toThrow(/OAUTH_TOKEN_ISSUER .* equals OAUTH_ISSUER/);
  });
});

describe("the external issuer beside ours", () => {
  it("when a gateway checks an external issuer's tokens by its public key, then those and ours are both accepted, each as its own kind", async () => {
    const t = await f.tenant();
    const { privateKey, publicKey } = await generateKeyPair("ES256", { extractable: true });
    const withIdp = await gateway({ OAUTH_ISSUER: "https://idp.example.com", OAUTH_PUBLIC_KEY: await exportSPKI(publicKey) });
    const external = await new SignJWT({ org_id: t.organizationId, scope: "tasks:read" })
      .setProtectedHeader({ alg: "ES256" })
      .setIssuer("https://idp.example.com")
      .setAudience("tasksvc-api")
      .setSubject(t.userId)
      .setIssuedAt()
      .setExpirationTime("10m")
      .sign(privateKey);
    const ours = await tokenFor(gw, await makeClient(gw, t, ["tasks:read"]));
    for (const token of [external, ours]) {
      const r = await withIdp.get("/v1/tasks", { token });
      expect(r.status, r.text).toBe(200);
    }
    // One of ours re-signed by the external key is still checked as ours, and fails.
    const [header, payload] = ours.split(".");
    const forged = `${header}.${payload}.${external.split(".")[2]}`;
    expect((await withIdp.get("/v1/tasks", { token: forged })).status).toBe(401);
  });

  it("when the development issuer's tokens are used beside ours on one gateway, then both work", async () => {
    const t = await f.tenant();
    const dev = await f.token(t.organizationId, t.userId, ["tasks:read"]);
    const ours = await tokenFor(gw, await makeClient(gw, t, ["tasks:read"]));
    for (const token of [dev, ours]) expect((await gw.get("/v1/tasks", { token })).status).toBe(200);
  });
});

describe("the per-address bound", () => {
  it("when one address sends more requests to the OAuth endpoints than the anonymous limit, then 429 with Retry-After, before any client is checked", async () => {
    const limited = await gateway({ ANON_RATE_LIMIT: "3/1m" });
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++)
      statuses.push((await postForm(limited, "/oauth/token", { grant_type: "client_credentials", client_id: "cli_x", client_secret: "guess" })).status);
    expect(statuses).toEqual([401, 401, 401]);
    const r = await postForm(limited, "/oauth/introspect", { token: "x", client_id: "cli_x", client_secret: "guess" });
    expect(r.status, r.text).toBe(429);
    expect(r.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(r.body.code).toBe("rate_limited");
  });
});
