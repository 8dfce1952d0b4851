import { connect, type Socket } from "node:net";
import { e2eContext, startExtraGateway, type Tenant, gatewayUrl } from "@tasksvc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// The edge of DESIGN.md section 20 on a real stack: credentials are checked from the headers
// before a body is read (401 with Connection: close, the body never read), a body that does not
// arrive within BODY_TIMEOUT is 408 and changes nothing, more than one Authorization field is a
// 400, and ANON_RATE_LIMIT counts the routes that need no credential and the refused credentials. Raw sockets, since no
// HTTP client sends half a body on purpose.
const { stack, gw, f } = e2eContext();
const shared = new URL(gatewayUrl(stack));

interface Answer {
  status: number;
  headers: Record<string, string>;
  // biome-ignore lint/suspicious/noExplicitAny: parsed problem bodies, asserted field by field
  body: any;
}

/** The first complete response in `buf` (framed by its Content-Length), if there is one. */
function firstAnswer(buf: Buffer): Answer | undefined {
  const end = buf.indexOf("\r\n\r\n");
  if (end === -1) return undefined;
  const [statusLine = "", ...lines] = buf.subarray(0, end).toString("latin1").split("\r\n");
  const headers: Record<string, string> = {};
  for (const line of lines) headers[line.slice(0, line.indexOf(":")).trim().toLowerCase()] = line.slice(line.indexOf(":") + 1).trim();
  const length = Number(headers["content-length"] ?? 0);
  if (buf.length < end + 4 + length) return undefined;
  const text = buf.subarray(end + 4, end + 4 + length).toString("utf8");
  return { status: Number(statusLine.split(" ")[1]), headers, body: text ? JSON.parse(text) : undefined };
}

/** Opens a connection to `gateway`, writes `head` and answers the first response once it is complete. */
function firstResponse(gateway: URL, head: string): { socket: Socket; answer: Promise<Answer>; closed: Promise<void>; errors: string[] } {
  const socket = connect({ host: gateway.hostname, port: Number(gateway.port), allowHalfOpen: true });
  const chunks: Buffer[] = [];
  const errors: string[] = [];
  socket.on("error", (e: NodeJS.ErrnoException) => errors.push(e.code ?? e.message));
  const closed = new Promise<void>((r) => socket.once("close", () => r()));
  const answer = new Promise<Answer>((resolve, reject) => {
    socket.on("data", (c: Buffer) => {
      chunks.push(c);
      const a = firstAnswer(Buffer.concat(chunks));
      if (a) resolve(a);
    });
    socket.once("close", () => reject(new Error(`closed without an answer: ${Buffer.concat(chunks).toString("latin1").slice(0, 300)}`)));
  });
  socket.write(head);
  return { socket, answer, closed, errors };
}

const MIB = 1024 * 1024;
const postHead = (path: string, length: number, extra: string[] = []) =>
  [`POST ${path} HTTP/1.1`, `Host: ${shared.host}`, "Content-Type: application/json", `Content-Length: ${length}`, ...extra, "", ""].join("\r\n");

describe("credentials before the body", () => {
  for (const [what, header, code] of [
    ["no credential", [], "missing_credentials"],
    ["an unknown API key", ["Authorization: Bearer svc_live_notAKey000000000000000000000000000000"], "invalid_api_key"],
    ["a malformed access token", ["Authorization: Bearer not.a.token"], "invalid_token"],
  ] as const) {
    it(`when a 1 MiB body is announced with ${what} and only its first KiB sent, then 401 ${code} with Connection: close before the rest, and the client's later writes are taken`, async () => {
      const c = firstResponse(shared, postHead("/v1/tasks", MIB, [...header]) + "x".repeat(1024));
      const a = await c.answer;
      expect(a.status, JSON.stringify(a.body)).toBe(401);
      expect(a.headers["connection"]).toBe("close");
      expect(a.headers["content-type"]).toMatch(/^application\/problem\+json/);
      expect(a.body).toMatchObject({ code, status: 401 });
      // The client goes on writing the body it announced, as curl does: the gateway drops it
      // (a lingering close), never resets the connection under the answer.
      for (let sent = 1024; sent < MIB && !c.socket.destroyed; sent += 64 * 1024) {
        await new Promise<void>((resolve) => c.socket.write("x".repeat(64 * 1024), () => resolve()));
      }
      c.socket.end();
      await c.closed;
      expect(c.errors).toEqual([]);
    });
  }

  it("when a valid API key sends the same body whole, then the request is read and answered as usual", async () => {
    const t = await f.tenant();
    const body = JSON.stringify({ title: "read after authentication" });
    const c = firstResponse(shared, postHead("/v1/tasks", Buffer.byteLength(body), [`Authorization: Bearer ${t.apiKey}`]) + body);
    const a = await c.answer;
    c.socket.destroy();
    expect(a.status, JSON.stringify(a.body)).toBe(201);
    expect(a.headers["connection"]).not.toBe("close");
  });
});

describe("more than one Authorization field", () => {
  it("when a request carries a valid credential and a second Authorization field, then 400 malformed_request and nothing is created", async () => {
    const t = await f.tenant();
    const body = JSON.stringify({ title: "two credentials" });
    const c = firstResponse(
      shared,
      postHead("/v1/tasks", Buffer.byteLength(body), [
        `Authorization: Bearer ${t.apiKey}`,
        "Authorization: Bearer svc_live_someoneElse0000000000000000000000000",
      ]) + body,
    );
    const a = await c.answer;
    c.socket.destroy();
    expect(a.status, JSON.stringify(a.body)).toBe(400);
    expect(a.body).toMatchObject({ code: "malformed_request", status: 400 });
    const list = await gw.get("/v1/tasks", { token: t.apiKey });
    expect(list.body.data).toEqual([]);
  });
});

describe("a gateway with BODY_TIMEOUT=1s and ANON_RATE_LIMIT=5/1m", () => {
  let gateway: URL;
  let stop: () => Promise<void> = async () => {};
  let t: Tenant;
  beforeAll(async () => {
    // One more gateway replica on the run's stack, with the settings under test.
    const extra = await startExtraGateway(stack, { BODY_TIMEOUT: "1s", ANON_RATE_LIMIT: "5/1m" });
    stop = extra.stop;
    gateway = extra.url;
    t = await f.tenant();
  });
  afterAll(() => stop());

  it("when an authenticated body stops half way, then 408 request_timeout with Connection: close, and the task is not created even when the rest comes late", async () => {
    const body = JSON.stringify({ title: "never finished" });
    const half = body.slice(0, 10);
    const c = firstResponse(gateway, postHead("/v1/tasks", Buffer.byteLength(body), [`Authorization: Bearer ${t.apiKey}`]) + half);
    const a = await c.answer;
    expect(a.status, JSON.stringify(a.body)).toBe(408);
    expect(a.headers["connection"]).toBe("close");
    expect(a.body).toMatchObject({ code: "request_timeout", status: 408 });
    c.socket.end(body.slice(10));
    await c.closed;
    // A read through the same replica is answered after anything the late rest could have run.
    const list = await fetch(`${gateway.origin}/v1/tasks`, { headers: { authorization: `Bearer ${t.apiKey}` } });
    expect(list.status).toBe(200);
    expect(((await list.json()) as { data: unknown[] }).data).toEqual([]);
  });

  it("when one address asks for more than 5 pages without a credential in a minute, then 429 rate_limited with Retry-After, while its authenticated calls go on", async () => {
    const statuses: number[] = [];
    for (const path of ["/docs", "/docs/errors", "/v1/openapi.json", "/healthz", "/v1/nothing-here", "/docs/errors"]) {
      statuses.push((await fetch(`${gateway.origin}${path}`)).status);
    }
    expect(statuses).toEqual([200, 200, 200, 200, 404, 429]);
    const refused = await fetch(`${gateway.origin}/readyz`);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await refused.json()).toMatchObject({ code: "rate_limited", status: 429 });
    const own = await fetch(`${gateway.origin}/v1/tasks`, { headers: { authorization: `Bearer ${t.apiKey}` } });
    expect(own.status).toBe(200);
    // A refused credential is anonymous too: guessing keys from this address meets the same limit.
    const guessed = await fetch(`${gateway.origin}/v1/tasks`, { headers: { authorization: "Bearer svc_live_guessed0000000000000000000000000000" } });
    expect(guessed.status).toBe(429);
    expect(await guessed.json()).toMatchObject({ code: "rate_limited" });
  });
});
