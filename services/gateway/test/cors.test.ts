import { ConfigError, parseConfig } from "@tasksvc/config";
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BuildOptions } from "../src/app.js";
import { CORS_EXPOSED_HEADERS } from "../src/http/cors.js";
import { bareGateway } from "./bare.js";
import { GatewayConfig } from "../src/config.js";

// No collaborators behind the routes: a preflight that reached authentication or charging would
// fail (500), so a 204 shows it reached neither.
const build = (corsOrigins: BuildOptions["corsOrigins"]) => bareGateway({ corsOrigins });

const APP = "https://app.example.test";
const OTHER = "https://other.example.test";
const preflight = (origin: string, method = "PATCH") => ({
  method: "OPTIONS" as const,
  url: "/v1/tasks/T-1",
  headers: { origin, "access-control-request-method": method, "access-control-request-headers": "authorization,content-type,idempotency-key" },
});
const list = (h: string | number | string[] | undefined) =>
  String(h ?? "")
    .split(",")
    .map((v) => v.trim().toLowerCase())
    .filter(Boolean);
const corsHeaders = (r: LightMyRequestResponse) => Object.keys(r.headers).filter((k) => k.startsWith("access-control-"));

let off: FastifyInstance;
let listed: FastifyInstance;
let any: FastifyInstance;
beforeAll(async () => {
  off = build(undefined);
  listed = build([APP, "http://localhost:5173"]);
  any = build("*");
  await Promise.all([off.ready(), listed.ready(), any.ready()]);
});
afterAll(async () => {
  await Promise.all([off?.close(), listed?.close(), any?.close()]);
});

describe("CORS_ORIGINS unset", () => {
  it("when a browser sends a preflight, then it is not answered as CORS: no Access-Control-* header, 405 (OPTIONS is not served)", async () => {
    const r = await off.inject(preflight(APP));
    expect(r.statusCode).toBe(405);
    expect(corsHeaders(r)).toEqual([]);
  });

  it("when a request carries an Origin, then the response has no Access-Control-* header", async () => {
    const r = await off.inject({ method: "GET", url: "/healthz", headers: { origin: APP } });
    expect(r.statusCode).toBe(200);
    expect(corsHeaders(r)).toEqual([]);
  });
});

describe("CORS_ORIGINS a list of origins", () => {
  it("when a listed origin sends a preflight without credentials, then 204 allowing it, the API's methods and the headers it reads; not authenticated, charged or rate-limited", async () => {
    const r = await listed.inject(preflight(APP));
    expect(r.statusCode, r.body).toBe(204);
    expect(r.headers["access-control-allow-origin"]).toBe(APP);
    expect(r.headers["access-control-allow-credentials"]).toBeUndefined();
    expect(list(r.headers["access-control-allow-methods"])).toEqual(["get", "head", "post", "put", "patch", "delete"]);
    expect(list(r.headers["access-control-allow-headers"])).toEqual(
      expect.arrayContaining(["authorization", "content-type", "idempotency-key", "if-match", "if-none-match", "traceparent", "mcp-protocol-version"]),
    );
    expect(Number(r.headers["access-control-max-age"])).toBeGreaterThan(0);
    expect(r.headers.vary).toContain("Origin");
    expect(r.headers["x-request-id"]).toMatch(/^req_/);
    expect(r.headers.ratelimit).toBeUndefined();
    expect(r.headers["x-ratelimit-remaining"]).toBeUndefined();
    expect(r.body).toBe("");
  });

  it("when a listed origin makes the actual request, then the response allows it and exposes the API's own headers", async () => {
    const r = await listed.inject({ method: "GET", url: "/healthz", headers: { origin: "http://localhost:5173" } });
    expect(r.statusCode).toBe(200);
    expect(r.headers["access-control-allow-origin"]).toBe("http://localhost:5173");
    expect(list(r.headers["access-control-expose-headers"])).toEqual(
      expect.arrayContaining([
        "x-request-id",
        "ratelimit",
        "ratelimit-policy",
        "x-ratelimit-limit",
        "x-ratelimit-remaining",
        "x-ratelimit-reset",
        "retry-after",
        "idempotency-replayed",
        "etag",
        "location",
        "traceparent",
      ]),
    );
    expect(list(r.headers["access-control-expose-headers"])).toEqual(CORS_EXPOSED_HEADERS.map((h) => h.toLowerCase()));
  });

  it("when an error is answered to a listed origin, then it carries the CORS headers too, so the page can read the problem", async () => {
    const r = await listed.inject({ method: "PUT", url: "/v1/tasks/T-1", headers: { origin: APP } });
    expect(r.statusCode).toBe(405);
    expect(r.headers["access-control-allow-origin"]).toBe(APP);
  });

  it("when an unlisted origin sends a preflight or a request, then no Access-Control-Allow-Origin: the browser refuses the page", async () => {
    const pre = await listed.inject(preflight(OTHER));
    expect(pre.headers["access-control-allow-origin"]).toBeUndefined();
    const r = await listed.inject({ method: "GET", url: "/healthz", headers: { origin: OTHER } });
    expect(r.statusCode).toBe(200);
    expect(r.headers["access-control-allow-origin"]).toBeUndefined();
  });

  it("when an OPTIONS request is not a preflight (no Origin), then 204 with what a preflight would say, never a bare text error", async () => {
    const r = await listed.inject({ method: "OPTIONS", url: "/v1/tasks" });
    expect(r.statusCode).toBe(204);
    expect(r.headers["access-control-allow-origin"]).toBeUndefined();
  });
});

describe("CORS_ORIGINS *", () => {
  it("when any origin sends a preflight or a request, then Access-Control-Allow-Origin is *", async () => {
    const pre = await any.inject(preflight(OTHER, "DELETE"));
    expect(pre.statusCode).toBe(204);
    expect(pre.headers["access-control-allow-origin"]).toBe("*");
    const r = await any.inject({ method: "GET", url: "/healthz", headers: { origin: OTHER } });
    expect(r.headers["access-control-allow-origin"]).toBe("*");
    expect(r.headers["access-control-expose-headers"]).toContain("x-request-id");
  });
});

describe("the CORS_ORIGINS setting", () => {
  const parse = (value: string) => parseConfig(GatewayConfig, { CORS_ORIGINS: value }).CORS_ORIGINS;
  const refusal = (value: string): string => {
    try {
      parse(value);
    } catch (e) {
      if (e instanceof ConfigError) return e.message;
      throw e;
    }
    throw new Error(`${value} was accepted`);
  };

  it("when it is unset or empty, then no CORS; `*` is any origin; a list is its origins, spaces trimmed", () => {
    expect(parseConfig(GatewayConfig, {}).CORS_ORIGINS).toBeUndefined();
    expect(parse("")).toBeUndefined();
    expect(parse("*")).toBe("*");
    expect(parse("https://app.example.com, http://localhost:5173")).toEqual(["https://app.example.com", "http://localhost:5173"]);
  });

  it("when an entry is not an origin as browsers send it, then the setting is refused naming it and the origin meant", () => {
    expect(refusal("https://app.example.com/")).toContain('write "https://app.example.com/" as https://app.example.com');
    expect(refusal("https://App.example.com:443")).toContain("as https://app.example.com");
    expect(refusal("app.example.com")).toContain('"app.example.com" is not an http(s) origin');
    expect(refusal("null")).toContain('"null" is not an http(s) origin');
    expect(refusal("https://a.example.com,,https://b.example.com")).toContain("an empty entry");
    expect(refusal("*, https://app.example.com")).toContain("`*` allows every origin and stands alone");
    expect(refusal("ftp://files.example.com")).toMatch(/^Invalid settings:\n {2}- CORS_ORIGINS: /);
  });
});
