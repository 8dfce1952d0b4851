import { SCOPES, type Scope } from "@tasksvc/contracts";
import { expect, it } from "vitest";
import type { Api } from "./http.js";
import type { factories as makeFactories } from "./factories.js";

export interface RouteUnderTest {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  path: string;
  scope: Scope;
  body?: unknown;
}

/**
 * The same security cases for every route: no credential, an unknown API key, a forged token,
 * and a valid credential without the route's scope. Each must be refused before any input rule.
 */
export function itEnforcesAuth(getApi: () => Api, getFactories: () => ReturnType<typeof makeFactories>, route: RouteUnderTest): void {
  const send = (token?: string) =>
    getApi().request(route.method, route.path, { ...(token === undefined ? {} : { token }), ...(route.body === undefined ? {} : { body: route.body }) });

  it(`when ${route.method} ${route.path} has no credential, then 401 missing_credentials`, async () => {
    const r = await send();
    expect(r.status, r.text).toBe(401);
    expect(r.body.code).toBe("missing_credentials");
    expect(r.headers.get("content-type")).toMatch(/^application\/problem\+json/);
  });

  it(`when ${route.method} ${route.path} has an unknown API key, then 401 invalid_api_key`, async () => {
    const r = await send("svc_live_thisKeyDoesNotExist0000000000000000000000");
    expect(r.status, r.text).toBe(401);
    expect(r.body.code).toBe("invalid_api_key");
  });

  it(`when ${route.method} ${route.path} has a forged access token, then 401 invalid_token`, async () => {
    const r = await send("eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl");
    expect(r.status, r.text).toBe(401);
    expect(r.body.code).toBe("invalid_token");
  });

  it(`when ${route.method} ${route.path} is called without scope ${route.scope}, then 403 insufficient_scope`, async () => {
    const f = getFactories();
    const t = await f.tenant("team");
    const others = SCOPES.filter((s) => s !== route.scope);
    const token = await f.token(t.organizationId, t.userId, others);
    const r = await send(token);
    expect(r.status, r.text).toBe(403);
    expect(r.body.code).toBe("insufficient_scope");
    expect(r.body.detail).toContain(route.scope);
  });
}
