import { brotliDecompressSync, gunzipSync } from "node:zlib";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chooseCoding, holdsCurrent, OPENAPI_CACHE_CONTROL } from "../src/openapi/docs-page.js";
import { MAX_PIPELINED } from "../src/http/edge.js";
import { bareGateway } from "./bare.js";
import { parseWire, portOf, rawConnection, until } from "./raw-http.js";

// The edge limits of DESIGN.md section 20 that need no credential or service behind the gateway:
// the OpenAPI document's encodings and caching, the anonymous routes' limit per address, more than
// one Authorization field, BODY_TIMEOUT, and the bound on pipelined requests per connection.

describe("the OpenAPI document", () => {
  const app = bareGateway({ resources: [] });
  afterAll(() => app.close());
  const get = (headers: Record<string, string> = {}) => app.inject({ method: "GET", url: "/v1/openapi.json", headers });

  it("when it is asked for with brotli, gzip or neither, then the same document in that coding, each with its own strong ETag, Vary and a public Cache-Control", async () => {
    const plain = await get();
    const br = await get({ "accept-encoding": "gzip, deflate, br" });
    const gz = await get({ "accept-encoding": "gzip" });
    for (const r of [plain, br, gz]) {
      expect(r.statusCode).toBe(200);
      expect(r.headers["vary"]).toBe("Accept-Encoding");
      expect(r.headers["cache-control"]).toBe(OPENAPI_CACHE_CONTROL);
      expect(r.headers["content-type"]).toBe("application/json; charset=utf-8");
      expect(r.headers["etag"]).toMatch(/^"[A-Za-z0-9_-]+(-gzip|-br)?"$/);
    }
    expect(plain.headers["content-encoding"]).toBeUndefined();
    expect(br.headers["content-encoding"]).toBe("br");
    expect(gz.headers["content-encoding"]).toBe("gzip");
    expect(new Set([plain.headers["etag"], br.headers["etag"], gz.headers["etag"]]).size).toBe(3);
    expect(brotliDecompressSync(br.rawPayload).equals(plain.rawPayload)).toBe(true);
    expect(gunzipSync(gz.rawPayload).equals(plain.rawPayload)).toBe(true);
    expect(br.rawPayload.length).toBeLessThan(plain.rawPayload.length / 4);
    expect(JSON.parse(plain.body)).toMatchObject({ openapi: expect.stringMatching(/^3\.1/) });
    // Built once: the next request gets the very same bytes and ETag.
    const again = await get({ "accept-encoding": "br" });
    expect(again.headers["etag"]).toBe(br.headers["etag"]);
    expect(again.rawPayload.equals(br.rawPayload)).toBe(true);
  });

  it("when If-None-Match names a copy in any coding (weak or strong, or *), then 304 with no body and the ETag of the coding asked for", async () => {
    const plainTag = (await get()).headers["etag"] as string;
    const brTag = (await get({ "accept-encoding": "br" })).headers["etag"] as string;
    for (const inm of [brTag, plainTag, `W/${brTag}`, `"other", ${plainTag}`, "*"]) {
      const r = await get({ "accept-encoding": "br", "if-none-match": inm });
      expect(r.statusCode, inm).toBe(304);
      expect(r.body, inm).toBe("");
      expect(r.headers["etag"], inm).toBe(brTag);
      expect(r.headers["vary"], inm).toBe("Accept-Encoding");
      expect(r.headers["cache-control"], inm).toBe(OPENAPI_CACHE_CONTROL);
    }
    const stale = await get({ "if-none-match": '"an-older-release"' });
    expect(stale.statusCode).toBe(200);
    expect(stale.rawPayload.length).toBeGreaterThan(1000);
  });

  it("when Accept-Encoding weighs the codings, then the acceptable one with the highest q-value, brotli first on a tie, identity when none is", () => {
    expect(chooseCoding(undefined)).toBe("identity");
    expect(chooseCoding("")).toBe("identity");
    expect(chooseCoding("gzip, br")).toBe("br");
    expect(chooseCoding("br;q=0.5, gzip")).toBe("gzip");
    expect(chooseCoding("br;q=0, gzip;q=0")).toBe("identity");
    expect(chooseCoding("deflate")).toBe("identity");
    expect(chooseCoding("*")).toBe("br");
    expect(chooseCoding("*;q=0, gzip")).toBe("gzip");
    expect(chooseCoding("x-gzip")).toBe("gzip");
    expect(chooseCoding("BR;Q=1")).toBe("br");
    expect(chooseCoding("identity;q=0, *;q=0")).toBe("identity");
  });

  it("when If-None-Match is absent, empty or names other ETags, then the document is not held", () => {
    expect(holdsCurrent(undefined, ['"a"'])).toBe(false);
    expect(holdsCurrent("", ['"a"'])).toBe(false);
    expect(holdsCurrent('"b", W/"c"', ['"a"'])).toBe(false);
    expect(holdsCurrent('W/"a"', ['"a"'])).toBe(true);
  });
});

describe("the routes that need no credential", () => {
  const app = bareGateway({ resources: [], anonRate: { limit: 3, windowMs: 60_000 } });
  afterAll(() => app.close());
  const from = (remoteAddress: string, url: string) => app.inject({ method: "GET", url, remoteAddress });

  it("when one address goes past ANON_RATE_LIMIT on documentation, probes or unknown paths, then 429 rate_limited with Retry-After, and other addresses still pass", async () => {
    const statuses = [
      (await from("203.0.113.7", "/docs/errors")).statusCode,
      (await from("203.0.113.7", "/healthz")).statusCode,
      (await from("203.0.113.7", "/v1/nothing-here")).statusCode,
    ];
    expect(statuses).toEqual([200, 200, 404]);
    const refused = await from("203.0.113.7", "/v1/openapi.json");
    expect(refused.statusCode, refused.body.slice(0, 200)).toBe(429);
    expect(refused.headers["content-type"]).toMatch(/^application\/problem\+json/);
    expect(refused.json()).toMatchObject({ code: "rate_limited", status: 429 });
    expect(Number(refused.headers["retry-after"])).toBeGreaterThan(0);
    expect(Number(refused.headers["retry-after"])).toBeLessThanOrEqual(60);
    expect((await from("203.0.113.7", "/docs")).statusCode).toBe(429);
    expect((await from("203.0.113.8", "/docs")).statusCode).toBe(200);
  });
});

describe("a gateway listening on a socket", () => {
  let app: FastifyInstance;
  let port = 0;
  let bodiesRun = 0;
  let docRequests = 0;
  beforeAll(async () => {
    app = bareGateway({ resources: [], bodyTimeoutMs: 1000 });
    app.post("/test-only/body", async () => {
      bodiesRun++;
      return { read: true };
    });
    app.addHook("onRequest", async (req) => {
      if (req.url === "/v1/openapi.json") docRequests++;
    });
    await app.listen({ port: 0, host: "127.0.0.1" });
    port = portOf(app.server.address());
  });
  afterAll(() => app.close());

  it("when a request carries two Authorization fields, then 400 malformed_request; with one, it passes", async () => {
    const c = rawConnection(port);
    c.socket.write(
      "GET /healthz HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\r\nauthorization: Bearer b\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\r\n\r\n",
    );
    const got = parseWire(await until(c.socket, c.received, (b) => parseWire(b).length === 2));
    c.socket.destroy();
    expect(got.map((r) => r.status)).toEqual([400, 200]);
    expect(JSON.parse(got[0]?.body.toString() ?? "")).toMatchObject({ code: "malformed_request", status: 400 });
    expect(JSON.parse(got[0]?.body.toString() ?? "").detail).toContain("Authorization");
  });

  it("when a body does not arrive within BODY_TIMEOUT, then 408 request_timeout under the request's id, the connection closes, and the route never runs even if the rest comes late", async () => {
    const c = rawConnection(port);
    c.socket.write('POST /test-only/body HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 20\r\n\r\n{"a":');
    const got = parseWire(await until(c.socket, c.received, (b) => parseWire(b).length === 1));
    expect(got[0]?.status).toBe(408);
    expect(got[0]?.headers["connection"]).toBe("close");
    expect(got[0]?.headers["x-request-id"]).toMatch(/^req_[0-9a-f]{32}$/);
    expect(JSON.parse(got[0]?.body.toString() ?? "")).toMatchObject({ code: "request_timeout", status: 408 });
    // The rest of the body, late, on the connection the gateway still reads (a lingering close).
    await new Promise<void>((resolve) => c.socket.write('"bbbbbbbbbbbbbbb"}', () => resolve()));
    // Another request's answer comes after anything the late body could have set off.
    const next = rawConnection(port);
    next.socket.write("POST /test-only/body HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
    const ok = parseWire(await until(next.socket, next.received, (b) => parseWire(b).length === 1));
    next.socket.destroy();
    expect(ok[0]?.status).toBe(200);
    expect(bodiesRun).toBe(1);
    c.socket.end();
    await c.closed;
    expect(c.errors).toEqual([]);
  });

  it(`when a client pipelines 200 requests for the OpenAPI document on one connection, then ${MAX_PIPELINED} run, the next is 429 with Connection: close, nothing behind it runs, and other connections are answered meanwhile`, async () => {
    const before = docRequests;
    const c = rawConnection(port);
    // The client reads nothing until the end: the answers it does not read are what a flood queues.
    c.socket.pause();
    c.socket.write("GET /v1/openapi.json HTTP/1.1\r\nHost: x\r\nAccept-Encoding: identity\r\n\r\n".repeat(200));
    const other = rawConnection(port);
    other.socket.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    const health = parseWire(await until(other.socket, other.received, (b) => parseWire(b).length === 1));
    other.socket.destroy();
    expect(health[0]?.status).toBe(200);
    c.socket.resume();
    await c.ended;
    c.socket.end();
    await c.closed;
    const got = parseWire(c.received());
    expect(got.map((r) => r.status)).toEqual([...Array(MAX_PIPELINED).fill(200), 429]);
    const last = got[got.length - 1];
    expect(last?.headers["connection"]).toBe("close");
    expect(last?.headers["retry-after"]).toBe("1");
    expect(JSON.parse(last?.body.toString() ?? "")).toMatchObject({ code: "rate_limited", status: 429 });
    expect(docRequests - before).toBe(MAX_PIPELINED);
  });
});
