import { api, factories, gatewayUrl } from "@tasksvc/testing";
import { afterAll, describe, expect, inject, it } from "vitest";

const stack = inject("stack");
const gw = api(gatewayUrl(stack));
const f = factories(stack);
afterAll(() => f.close());

const isProblem = (r: { headers: Headers }) => expect(r.headers.get("content-type")).toMatch(/^application\/problem\+json/);

describe("request ids", () => {
  it("when any request is answered, success or error, then x-request-id is set and unique", async () => {
    const t = await f.tenant();
    const responses = await Promise.all([
      gw.get("/v1/organizations", { token: t.apiKey }),
      gw.get("/v1/organizations"),
      gw.get("/no/such/route"),
      gw.request("POST", "/v1/api-keys", { token: t.apiKey, rawBody: "{oops", headers: { "content-type": "application/json" } }),
      gw.get("/healthz"),
    ]);
    const ids = responses.map((r) => r.headers.get("x-request-id"));
    for (const id of ids) expect(id).toMatch(/^req_[0-9a-f]{32}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("when a client sends its own x-request-id, then the gateway still issues a fresh one", async () => {
    const r = await gw.get("/healthz", { headers: { "x-request-id": "mine" } });
    expect(r.headers.get("x-request-id")).not.toBe("mine");
  });
});

describe("problem+json for every error", () => {
  it("when the route does not exist, then 404 route_not_found as a problem", async () => {
    const r = await gw.get("/v1/nothing-here");
    expect(r.status, r.text).toBe(404);
    isProblem(r);
    // type: a URL the client can follow, on the gateway's base URL (PUBLIC_BASE_URL unset:
    // localhost on its port, whichever address the request was sent to).
    expect(r.body).toMatchObject({
      type: `http://localhost:${new URL(gatewayUrl(stack)).port}/docs/errors#route_not_found`,
      title: "Route not found",
      status: 404,
      code: "route_not_found",
    });
    expect(r.body.request_id).toBeUndefined();
  });

  it("when the JSON body is malformed, then 400 validation_failed and nothing is created", async () => {
    const t = await f.tenant();
    const before = await gw.get("/v1/api-keys", { token: t.apiKey });
    const r = await gw.request("POST", "/v1/api-keys", { token: t.apiKey, rawBody: '{"name": ', headers: { "content-type": "application/json" } });
    expect(r.status, r.text).toBe(400);
    isProblem(r);
    expect(r.body.code).toBe("validation_failed");
    expect(r.body.errors).toEqual([{ pointer: "/", message: "is not valid JSON" }]);
    const after = await gw.get("/v1/api-keys", { token: t.apiKey });
    expect(after.body.data).toHaveLength(before.body.data.length);
  });

  it("when the content type is not JSON, then 415 unsupported_media_type", async () => {
    const t = await f.tenant();
    const r = await gw.request("POST", "/v1/api-keys", {
      token: t.apiKey,
      rawBody: "name=x",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expect(r.status, r.text).toBe(415);
    isProblem(r);
    expect(r.body.code).toBe("unsupported_media_type");
  });

  it("when text/plain is sent, then 415 too (only JSON bodies are parsed)", async () => {
    const t = await f.tenant();
    const r = await gw.request("POST", "/v1/api-keys", { token: t.apiKey, rawBody: '{"name":"x"}', headers: { "content-type": "text/plain" } });
    expect(r.status, r.text).toBe(415);
  });

  it("when the body is larger than the limit, then 413 payload_too_large", async () => {
    const t = await f.tenant();
    const r = await gw.post("/v1/api-keys", { name: "x".repeat(2 * 1024 * 1024) }, { token: t.apiKey });
    expect(r.status, r.text).toBe(413);
    isProblem(r);
    expect(r.body.code).toBe("payload_too_large");
  });

  it("when the body is valid JSON but not an object, then 400 with pointer /", async () => {
    const t = await f.tenant();
    const r = await gw.post("/v1/api-keys", [1, 2], { token: t.apiKey });
    expect(r.status, r.text).toBe(400);
    expect(r.body.errors[0].pointer).toBe("/");
  });

  it("when a query parameter is unknown, then 400 naming it", async () => {
    const t = await f.tenant();
    const r = await gw.get("/v1/organizations?colour=blue", { token: t.apiKey });
    expect(r.status, r.text).toBe(400);
    expect(r.body.errors).toContainEqual({ pointer: "/colour", message: "is not a recognized field" });
  });

  it("when limit is out of range, then 400 with pointer /limit", async () => {
    const t = await f.tenant();
    for (const limit of ["0", "101", "abc"]) {
      const r = await gw.get(`/v1/members?limit=${limit}`, { token: t.apiKey });
      expect(r.status, r.text).toBe(400);
      expect(r.body.errors[0].pointer).toBe("/limit");
    }
  });
});

describe("health", () => {
  it("when the process runs, then /healthz answers 200", async () => {
    const r = await gw.get("/healthz");
    expect(r.status, r.text).toBe(200);
    expect(r.body).toEqual({ status: "ok" });
  });

  it("when Postgres, NATS and every service it forwards to answer, then /readyz answers 200 with each check", async () => {
    const r = await gw.get("/readyz");
    expect(r.status, r.text).toBe(200);
    expect(r.body).toEqual({
      status: "ready",
      checks: {
        postgres: "ok",
        nats: "ok",
        "service:keys": "ok",
        "service:tasks": "ok",
        "service:boards": "ok",
        "service:webhooks": "ok",
        "service:notifications": "ok",
      },
    });
  });
});
