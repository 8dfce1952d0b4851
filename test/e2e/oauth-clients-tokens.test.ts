import { decodeJwt, decodeProtectedHeader } from "jose";
import { api, e2eContext, gatewayUrl } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";
import { basicAuth, expectOAuthError, makeClient, postForm, tokenFor } from "./oauth-helpers.js";

// DESIGN section 17: the token endpoint (RFC 6749 4.4), revocation (RFC 7009), introspection
// (RFC 7662), and our tokens on the REST API, on every replica.
const { gw, f, stack, db } = e2eContext();
const gw2 = api(gatewayUrl(stack, 1));
const GRANT = { grant_type: "client_credentials" };

describe("POST /oauth/token", () => {
  it("when a client authenticates with HTTP Basic, then a Bearer JWT acting as its creator with every scope of the client, not to be cached", async () => {
    const t = await f.tenant();
    const c = await makeClient(gw, t, ["tasks:read", "projects:read"]);
    const r = await postForm(gw, "/oauth/token", GRANT, { authorization: basicAuth(c.client_id, c.client_secret) });
    expect(r.status, r.text).toBe(200);
    expect(r.headers.get("cache-control")).toBe("no-store");
    expect(r.body).toEqual({ access_token: expect.any(String), token_type: "Bearer", expires_in: 3600, scope: "tasks:read projects:read" });
    const claims = decodeJwt(r.body.access_token);
    expect(claims).toMatchObject({ iss: "http://tasksvc.test", aud: "tasksvc-api", sub: t.userId, org_id: t.organizationId, client_id: c.client_id });
    expect((claims.exp ?? 0) - (claims.iat ?? 0)).toBe(3600);
    expect(claims.jti).toMatch(/^oat_/);
    expect(decodeProtectedHeader(r.body.access_token)).toMatchObject({ typ: "at+jwt", alg: "ES256" });
  });

  it("when a client sends its id and secret in the form and asks for a subset, then the token has exactly that subset", async () => {
    const t = await f.tenant();
    const c = await makeClient(gw, t, ["tasks:read", "tasks:write"]);
    const r = await postForm(gw, "/oauth/token", { ...GRANT, scope: "tasks:read", client_id: c.client_id, client_secret: c.client_secret });
    expect(r.status, r.text).toBe(200);
    expect(r.body.scope).toBe("tasks:read");
    expect(decodeJwt(r.body.access_token).scope).toBe("tasks:read");
  });

  it("when a scope beyond the client's is asked for, then 400 invalid_scope", async () => {
    const t = await f.tenant();
    const c = await makeClient(gw, t, ["tasks:read"]);
    for (const scope of ["tasks:write", "tasks:read members:write", "nonsense"]) {
      const r = await postForm(gw, "/oauth/token", { ...GRANT, scope }, { authorization: basicAuth(c.client_id, c.client_secret) });
      expectOAuthError(r, 400, "invalid_scope");
    }
  });

  it("when the client is unknown or its secret wrong, then 401 invalid_client, with a Basic challenge only when Basic was tried", async () => {
    const t = await f.tenant();
    const c = await makeClient(gw, t);
    const wrong = await postForm(gw, "/oauth/token", GRANT, { authorization: basicAuth(c.client_id, `${c.client_secret}x`) });
    expectOAuthError(wrong, 401, "invalid_client");
    expect(wrong.headers.get("www-authenticate")).toMatch(/^Basic /);
    const unknown = await postForm(gw, "/oauth/token", { ...GRANT, client_id: "cli_unknown", client_secret: c.client_secret });
    expectOAuthError(unknown, 401, "invalid_client");
    expect(unknown.headers.get("www-authenticate")).toBeNull();
    for (const client_id of ["cli_\u0000nul", "x".repeat(101), "cli_ space"]) {
      expectOAuthError(await postForm(gw, "/oauth/token", { ...GRANT, client_id, client_secret: c.client_secret }), 401, "invalid_client");
    }
    const none = await postForm(gw, "/oauth/token", GRANT);
    expectOAuthError(none, 401, "invalid_client");
    // Another client's secret.
    const other = await makeClient(gw, t);
    expectOAuthError(await postForm(gw, "/oauth/token", { ...GRANT, client_id: c.client_id, client_secret: other.client_secret }), 401, "invalid_client");
  });

  it("when the request is malformed (no grant_type, a parameter twice, both ways of authenticating, not a form), then 400 invalid_request", async () => {
    const t = await f.tenant();
    const c = await makeClient(gw, t);
    const basic = { authorization: basicAuth(c.client_id, c.client_secret) };
    expectOAuthError(await postForm(gw, "/oauth/token", {}, basic), 400, "invalid_request");
    const twice = await gw.request("POST", "/oauth/token", {
      rawBody: "grant_type=client_credentials&grant_type=client_credentials",
      headers: { "content-type": "application/x-www-form-urlencoded", ...basic },
    });
    expectOAuthError(twice, 400, "invalid_request");
    expectOAuthError(await postForm(gw, "/oauth/token", { ...GRANT, client_id: c.client_id, client_secret: c.client_secret }, basic), 400, "invalid_request");
    expectOAuthError(await gw.post("/oauth/token", GRANT, { headers: basic }), 400, "invalid_request");
    expectOAuthError(
      await gw.request("POST", "/oauth/token", { rawBody: "grant_type=client_credentials", headers: { "content-type": "text/plain", ...basic } }),
      400,
      "invalid_request",
    );
  });

  it("when another grant type is asked for, then 400 unsupported_grant_type", async () => {
    for (const grant_type of ["authorization_code", "password", "refresh_token"]) {
      expectOAuthError(await postForm(gw, "/oauth/token", { grant_type, client_id: "cli_x", client_secret: "s" }), 400, "unsupported_grant_type");
    }
  });

  it("when the form is larger than the endpoints read, then 413 as a problem (OAuth has no code for it)", async () => {
    const r = await postForm(gw, "/oauth/token", { ...GRANT, scope: "x".repeat(10_000) });
    expect(r.status, r.text).toBe(413);
    expect(r.headers.get("content-type")).toMatch(/^application\/problem\+json/);
  });
});

describe("our tokens on the REST API", () => {
  it("when a token is used, then it acts as the client's creator within its scopes, and is refused outside them", async () => {
    const t = await f.tenant();
    const c = await makeClient(gw, t, ["tasks:read", "tasks:write"]);
    const token = await tokenFor(gw, c);
    const created = await gw.post("/v1/tasks", { title: "by a machine" }, { token, headers: { "idempotency-key": "machine-1" } });
    expect(created.status, created.text).toBe(201);
    expect(created.body.owner_id).toBe(t.userId);
    // The client is the credential: its idempotency records are its own, whichever token sent them.
    const records = await db`select credential_id from gateway.idempotency_keys where key = 'machine-1' and credential_id = ${c.id}`;
    expect(records.length).toBe(1);
    const again = await gw.post("/v1/tasks", { title: "by a machine" }, { token: await tokenFor(gw, c), headers: { "idempotency-key": "machine-1" } });
    expect(again.status, again.text).toBe(201);
    expect(again.body.id).toBe(created.body.id);
    expect((await gw2.get(`/v1/tasks/${created.body.id}`, { token })).status).toBe(200);
    for (const r of [await gw.get("/v1/projects", { token }), await gw.get("/v1/members", { token })]) {
      expect(r.status, r.text).toBe(403);
      expect(r.body.code).toBe("insufficient_scope");
    }
    const narrow = await tokenFor(gw, c, "tasks:read");
    const refused = await gw.post("/v1/tasks", { title: "no" }, { token: narrow });
    expect(refused.status, refused.text).toBe(403);
  });

  it("when the client's creator is demoted, then its tokens act with the member's role now (no minting of keys)", async () => {
    const t = await f.tenant();
    const admin = await f.user(t.organizationId, "admin");
    const made = await gw.post(
      "/v1/oauth-clients",
      { name: "admin's", scopes: ["api-keys:manage"] },
      { token: await f.token(t.organizationId, admin.userId, ["api-keys:manage"]) },
    );
    expect(made.status, made.text).toBe(201);
    const token = await tokenFor(gw, made.body);
    expect((await gw.post("/v1/api-keys", { name: "ok" }, { token })).status).toBe(201);
    await f.admin("setRole", { org: t.organizationId, user: admin.userId, role: "member" });
    const r = await gw.post("/v1/api-keys", { name: "not any more" }, { token });
    expect(r.status, r.text).toBe(403);
  });
});

describe("revocation, deletion and departure stop a token on the next request, on every replica", () => {
  const warm = async (token: string) => {
    for (const g of [gw, gw2]) expect((await g.get("/v1/tasks", { token })).status).toBe(200);
  };
  const refusedEverywhere = async (token: string) => {
    for (const g of [gw2, gw]) {
      const r = await g.get("/v1/tasks", { token });
      expect(r.status, r.text).toBe(401);
      expect(r.body.code).toBe("invalid_token");
    }
  };

  it("when a token is revoked through one replica, then the other, which had it cached, refuses it at once; other tokens of the client go on", async () => {
    const t = await f.tenant();
    const c = await makeClient(gw, t, ["tasks:read"]);
    const [token, other] = [await tokenFor(gw, c), await tokenFor(gw, c)];
    await warm(token);
    const r = await postForm(gw, "/oauth/revoke", { token, token_type_hint: "access_token" }, { authorization: basicAuth(c.client_id, c.client_secret) });
    expect(r.status, r.text).toBe(200);
    expect(r.text).toBe("");
    await refusedEverywhere(token);
    expect((await gw2.get("/v1/tasks", { token: other })).status).toBe(200);
  });

  it("when a token is revoked by another client, or is not a token at all, then 200 and nothing changes; without client credentials, 401", async () => {
    const t = await f.tenant();
    const [c, d] = [await makeClient(gw, t), await makeClient(gw, t)];
    const token = await tokenFor(gw, c);
    for (const candidate of [token, "not-a-token"]) {
      const r = await postForm(gw, "/oauth/revoke", { token: candidate }, { authorization: basicAuth(d.client_id, d.client_secret) });
      expect(r.status, r.text).toBe(200);
    }
    expect((await gw.get("/v1/tasks", { token })).status).toBe(200);
    expectOAuthError(await postForm(gw, "/oauth/revoke", { token }), 401, "invalid_client");
    expectOAuthError(await postForm(gw, "/oauth/revoke", {}, { authorization: basicAuth(c.client_id, c.client_secret) }), 400, "invalid_request");
  });

  it("when the client is deleted, then its tokens are refused at once on both replicas, and it gets no new one", async () => {
    const t = await f.tenant();
    const c = await makeClient(gw, t, ["tasks:read"]);
    const token = await tokenFor(gw, c);
    await warm(token);
    expect((await gw.delete(`/v1/oauth-clients/${c.id}`, { token: t.apiKey })).status).toBe(200);
    await refusedEverywhere(token);
    expectOAuthError(await postForm(gw, "/oauth/token", GRANT, { authorization: basicAuth(c.client_id, c.client_secret) }), 401, "invalid_client");
  });

  it("when the member who created the client is removed, then its tokens are refused at once on both replicas, and the client is gone", async () => {
    const t = await f.tenant();
    const admin = await f.user(t.organizationId, "admin");
    const made = await gw.post(
      "/v1/oauth-clients",
      { name: "leaver's", scopes: ["tasks:read"] },
      { token: await f.token(t.organizationId, admin.userId, ["api-keys:manage"]) },
    );
    expect(made.status, made.text).toBe(201);
    const token = await tokenFor(gw, made.body);
    await warm(token);
    expect((await gw.delete(`/v1/members/${admin.userId}`, { token: t.apiKey })).status).toBe(200);
    await refusedEverywhere(token);
    expect((await gw.get(`/v1/oauth-clients/${made.body.id}`, { token: t.apiKey })).status).toBe(404);
  });
});

describe("POST /oauth/introspect", () => {
  const inspect = (c: { client_id: string; client_secret: string }, token: string) =>
    postForm(gw2, "/oauth/introspect", { token }, { authorization: basicAuth(c.client_id, c.client_secret) });

  it("when an active token is inspected by a client of its organization, then its RFC 7662 members, its scopes those in effect", async () => {
    const t = await f.tenant();
    const [c, resourceServer] = [await makeClient(gw, t, ["tasks:read", "tasks:write"]), await makeClient(gw, t, ["tasks:read"])];
    const token = await tokenFor(gw, c, "tasks:read");
    const claims = decodeJwt(token);
    const r = await inspect(resourceServer, token);
    expect(r.status, r.text).toBe(200);
    expect(r.headers.get("cache-control")).toBe("no-store");
    expect(r.body).toEqual({
      active: true,
      scope: "tasks:read",
      client_id: c.client_id,
      sub: t.userId,
      org_id: t.organizationId,
      token_type: "Bearer",
      exp: claims.exp,
      iat: claims.iat,
      iss: "http://tasksvc.test",
      aud: "tasksvc-api",
      jti: claims.jti,
    });
  });

  it("when the token is revoked, unknown, another organization's, of a deleted client, of a departed creator, or another issuer's, then only { active: false }", async () => {
    const [t, other] = [await f.tenant(), await f.tenant()];
    const c = await makeClient(gw, t, ["tasks:read"]);
    const revoked = await tokenFor(gw, c);
    await postForm(gw, "/oauth/revoke", { token: revoked }, { authorization: basicAuth(c.client_id, c.client_secret) });
    const foreign = await tokenFor(gw, await makeClient(gw, other, ["tasks:read"]));
    const doomed = await makeClient(gw, t, ["tasks:read"]);
    const ofDeleted = await tokenFor(gw, doomed);
    await gw.delete(`/v1/oauth-clients/${doomed.id}`, { token: t.apiKey });
    const admin = await f.user(t.organizationId, "admin");
    const leaverClient = await gw.post(
      "/v1/oauth-clients",
      { name: "leaver", scopes: ["tasks:read"] },
      { token: await f.token(t.organizationId, admin.userId, ["api-keys:manage"]) },
    );
    const ofLeaver = await tokenFor(gw, leaverClient.body);
    await gw.delete(`/v1/members/${admin.userId}`, { token: t.apiKey });
    const external = await f.token(t.organizationId, t.userId, ["tasks:read"]);
    for (const [what, token] of Object.entries({ revoked, foreign, ofDeleted, ofLeaver, external, unknown: "abc.def.ghi" })) {
      const r = await inspect(c, token);
      expect(r.status, `${what}: ${r.text}`).toBe(200);
      expect(r.body, what).toEqual({ active: false });
    }
  });

  it("when the inspecting client does not authenticate, then 401 invalid_client; without a token, 400 invalid_request", async () => {
    const t = await f.tenant();
    const c = await makeClient(gw, t);
    const token = await tokenFor(gw, c);
    expectOAuthError(await postForm(gw, "/oauth/introspect", { token }), 401, "invalid_client");
    expectOAuthError(await postForm(gw, "/oauth/introspect", {}, { authorization: basicAuth(c.client_id, c.client_secret) }), 400, "invalid_request");
  });
});
