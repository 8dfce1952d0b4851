import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bareGateway } from "./bare.js";

// The real route table with no collaborators behind it: a 405 or 404 is answered by the router
// alone, so any authentication, charging or service call would fail these tests loudly.

let app: FastifyInstance;
let withCors: FastifyInstance;
beforeAll(async () => {
  app = bareGateway();
  withCors = bareGateway({ corsOrigins: ["https://app.example.test"] });
  await Promise.all([app.ready(), withCors.ready()]);
});
afterAll(async () => {
  await Promise.all([app?.close(), withCors?.close()]);
});

const allowOf = (h: string | number | string[] | undefined) =>
  String(h ?? "")
    .split(",")
    .map((m) => m.trim())
    .filter(Boolean);

describe("a method the path does not serve", () => {
  it("when PUT /v1/tasks/T-1 is sent without credentials, then 405 method_not_allowed as a problem, Allow naming GET, HEAD, PATCH and DELETE", async () => {
    const r = await app.inject({ method: "PUT", url: "/v1/tasks/T-1", payload: { title: "x" } });
    expect(r.statusCode, r.body).toBe(405);
    expect(r.headers["content-type"]).toContain("application/problem+json");
    expect(r.headers["x-request-id"]).toMatch(/^req_/);
    expect(r.json()).toMatchObject({ status: 405, code: "method_not_allowed", title: "Method not allowed" });
    expect(r.json().detail).toBe("PUT is not served at /v1/tasks/T-1; it serves GET, HEAD, PATCH, DELETE.");
    expect(allowOf(r.headers.allow)).toEqual(["GET", "HEAD", "PATCH", "DELETE"]);
  });

  it("when the same request carries a credential (valid or not), then the same 405: the route table is public, so it is answered before authentication", async () => {
    const r = await app.inject({ method: "PUT", url: "/v1/tasks/T-1?x=1", headers: { authorization: "Bearer svc_live_whatever" } });
    expect(r.statusCode, r.body).toBe(405);
    expect(r.json().code).toBe("method_not_allowed");
    expect(allowOf(r.headers.allow)).toEqual(["GET", "HEAD", "PATCH", "DELETE"]);
    expect(r.headers["www-authenticate"]).toBeUndefined();
  });

  it("when a collection, an action or a document gets a method it lacks, then 405 with that path's own methods", async () => {
    const tasks = await app.inject({ method: "DELETE", url: "/v1/tasks" });
    expect(tasks.statusCode).toBe(405);
    expect(allowOf(tasks.headers.allow)).toEqual(["GET", "HEAD", "POST"]);
    const archive = await app.inject({ method: "GET", url: "/v1/tasks/T-1/archive" });
    expect(archive.statusCode).toBe(405);
    expect(allowOf(archive.headers.allow)).toEqual(["POST"]);
    const docs = await app.inject({ method: "POST", url: "/docs" });
    expect(docs.statusCode).toBe(405);
    expect(allowOf(docs.headers.allow)).toEqual(["GET", "HEAD"]);
  });

  it("when the path is unknown, whatever the method, then 404 route_not_found with no Allow", async () => {
    for (const method of ["GET", "PUT", "OPTIONS"] as const) {
      const r = await app.inject({ method, url: "/v1/nothing-here/1" });
      expect(r.statusCode, `${method}: ${r.body}`).toBe(404);
      expect(r.json().code).toBe("route_not_found");
      expect(r.headers.allow).toBeUndefined();
    }
  });

  it("when CORS is off, then OPTIONS on a known path is a method it does not serve: 405 without OPTIONS in Allow", async () => {
    const r = await app.inject({ method: "OPTIONS", url: "/v1/tasks" });
    expect(r.statusCode).toBe(405);
    expect(allowOf(r.headers.allow)).toEqual(["GET", "HEAD", "POST"]);
  });

  it("when CORS is on, then Allow names OPTIONS too (preflights are answered), and an unknown path stays 404", async () => {
    const r = await withCors.inject({ method: "PUT", url: "/v1/tasks/T-1" });
    expect(r.statusCode).toBe(405);
    expect(allowOf(r.headers.allow)).toEqual(["GET", "HEAD", "PATCH", "DELETE", "OPTIONS"]);
    const unknown = await withCors.inject({ method: "GET", url: "/v1/nothing-here" });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.headers.allow).toBeUndefined();
  });
});

describe("the methods CORS allows", () => {
  it("when a route with a method outside CORS_METHODS is added, then the gateway refuses it, so preflights never lag behind the routes", () => {
    const gateway = bareGateway();
    expect(() => gateway.route({ method: "QUERY", url: "/test-only/search", handler: async () => ({}) })).toThrow(/add QUERY to CORS_METHODS/);
  });
});

describe("/metrics", () => {
  it("when GET /metrics is asked of the public port, then 404 route_not_found as a problem: metrics are on the ops port only", async () => {
    const r = await app.inject({ method: "GET", url: "/metrics" });
    expect(r.statusCode).toBe(404);
    expect(r.headers["content-type"]).toContain("application/problem+json");
    expect(r.json().code).toBe("route_not_found");
    expect(r.body).not.toContain("tasksvc_");
  });
});
