import type { Api, ApiResponse, Tenant } from "@tasksvc/testing";
import { expect } from "vitest";

export interface MadeClient {
  id: string;
  client_id: string;
  client_secret: string;
  scopes: string[];
}

export const basicAuth = (id: string, secret: string) => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString("base64")}`;

/** A form POST to one of the /oauth endpoints, as OAuth client libraries send it. */
export function postForm(gw: Api, path: string, form: Record<string, string>, headers: Record<string, string> = {}): Promise<ApiResponse> {
  return gw.request("POST", path, {
    rawBody: new URLSearchParams(form).toString(),
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
  });
}

export async function makeClient(gw: Api, t: Tenant, scopes: string[] = ["tasks:read", "tasks:write"], name = "machine"): Promise<MadeClient> {
  const r = await gw.post("/v1/oauth-clients", { name, scopes }, { token: t.apiKey });
  expect(r.status, r.text).toBe(201);
  return r.body as MadeClient;
}

/** A token by HTTP Basic, with the scopes asked for (all of the client's when none). */
export async function tokenFor(gw: Api, c: MadeClient, scope?: string): Promise<string> {
  const r = await postForm(
    gw,
    "/oauth/token",
    { grant_type: "client_credentials", ...(scope ? { scope } : {}) },
    { authorization: basicAuth(c.client_id, c.client_secret) },
  );
  expect(r.status, r.text).toBe(200);
  return String(r.body.access_token);
}

/** RFC 6749 5.2's shape exactly: no problem+json, no other member. */
export function expectOAuthError(r: ApiResponse, status: number, error: string): void {
  expect(r.status, r.text).toBe(status);
  expect(r.headers.get("content-type")).toMatch(/^application\/json/);
  expect(Object.keys(r.body).sort()).toEqual(["error", "error_description"]);
  expect(r.body.error).toBe(error);
  expect(r.headers.get("cache-control")).toBe("no-store");
}
