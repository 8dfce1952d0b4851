import { connect } from "node:net";
import { factories, type Tenant, gatewayUrl } from "@tasksvc/testing";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";

// Issue 9, finding 5: what Node's HTTP server and fastify's router answered on their own (431, 414,
// 400 "Client Error", bare JSON) was outside the contract. Every such answer is now a problem with
// an x-request-id (decision 0010). Raw sockets, because no HTTP client sends these requests.

const stack = inject("stack");
const target = new URL(gatewayUrl(stack));
const f = factories(stack);
let t: Tenant;
beforeAll(async () => {
  t = await f.tenant();
});
afterAll(() => f.close());

interface ProblemBody {
  code?: string;
  request_id?: string;
  errors?: { pointer: string }[];
  [field: string]: unknown;
}
interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: ProblemBody;
  /** Status line, headers and body, for assertion messages. */
  text: string;
}

/** Splits what the server wrote into responses (each framed by its Content-Length). */
function parseResponses(buf: Buffer): RawResponse[] {
  const out: RawResponse[] = [];
  let rest = buf;
  while (rest.length > 0) {
    const end = rest.indexOf("\r\n\r\n");
    if (end === -1) break;
    const [statusLine = "", ...lines] = rest.subarray(0, end).toString("latin1").split("\r\n");
    const headers: Record<string, string> = {};
    for (const l of lines) {
      const i = l.indexOf(":");
      headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
    }
    const length = Number(headers["content-length"] ?? rest.length - end - 4);
    const text = rest.subarray(end + 4, end + 4 + length).toString("utf8");
    let body: ProblemBody = {};
    try {
      body = JSON.parse(text) as ProblemBody;
    } catch {
      // not JSON: the assertions print the text
    }
    out.push({ status: Number(statusLine.split(" ")[1]), headers, body, text: `${statusLine} ${JSON.stringify(headers)} ${text}` });
    rest = rest.subarray(end + 4 + length);
  }
  return out;
}

/**
 * Writes `request` as it is on a new connection and collects everything until the server closes
 * it (requests that parse send `Connection: close`, so every case ends by the server's hand).
 */
function exchange(request: string | Buffer): Promise<RawResponse[]> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: target.hostname, port: Number(target.port) });
    const chunks: Buffer[] = [];
    let failure: Error | undefined;
    socket.setTimeout(10_000, () => socket.destroy(new Error("the server neither answered nor closed within 10 s")));
    socket.on("data", (c: Buffer) => chunks.push(c));
    // A reset after the answer still leaves the answer: judge by what arrived.
    socket.on("error", (e) => (failure = e));
    socket.on("close", () => {
      const got = parseResponses(Buffer.concat(chunks));
      if (got.length === 0) reject(failure ?? new Error(`no response; raw: ${Buffer.concat(chunks).toString("latin1")}`));
      else resolve(got);
    });
    socket.write(request);
  });
}
const one = async (request: string | Buffer) => (await exchange(request))[0] as RawResponse;
const request = (method: string, path: string, headers: string[] = [], body = "") =>
  [`${method} ${path} HTTP/1.1`, `Host: ${target.host}`, ...headers, "", body].join("\r\n");
const closing = (method: string, path: string, headers: string[] = [], body = "") => request(method, path, ["Connection: close", ...headers], body);

function expectProblem(r: RawResponse, status: number, code: string): void {
  expect(r.status, r.text).toBe(status);
  expect(r.headers["content-type"], r.text).toMatch(/^application\/problem\+json/);
  expect(r.headers["x-request-id"], r.text).toMatch(/^req_[0-9a-f]{32}$/);
  // On the gateway's base URL (PUBLIC_BASE_URL unset: localhost on its port), whatever Host was
  // sent, or none, and on a raw socket answer too.
  const type = `http://localhost:${target.port}/docs/errors#${code}`;
  expect(r.body, r.text).toMatchObject({ type, status, code, title: expect.any(String), detail: expect.any(String) });
  // What every answer carries, those written before any route runs included.
  expect(r.headers["x-content-type-options"], r.text).toBe("nosniff");
  expect(r.headers["cache-control"], r.text).toBe("no-store");
  // 4xx bodies carry no request_id (docs/errors.md); where one is present it is the header's.
  if (r.body.request_id !== undefined) expect(r.body.request_id, r.text).toBe(r.headers["x-request-id"]);
}

describe("the HTTP parser's refusals (Node's clientError)", () => {
  it("when the headers exceed 16 KiB, then 431 headers_too_large as a problem, and the connection closes", async () => {
    const r = await one(request("GET", "/healthz", [`X-Padding: ${"a".repeat(20 * 1024)}`]));
    expectProblem(r, 431, "headers_too_large");
    expect(r.headers["connection"], r.text).toBe("close");
  });

  it("when a path id makes the request line itself exceed 16 KiB, then 431 as a problem too", async () => {
    const r = await one(closing("GET", `/v1/tasks/${"1".repeat(17 * 1024)}`, [`Authorization: Bearer ${t.apiKey}`]));
    expectProblem(r, 431, "headers_too_large");
  });

  it("when a header value holds a control character or NUL, then 400 malformed_request as a problem", async () => {
    for (const header of ["X-Note: a\u0001b", "Idempotency-Key: ab\u0000cd", "X-Note: line\rbreak", "Bad Name: x"]) {
      const r = await one(
        closing("POST", "/v1/tasks", [`Authorization: Bearer ${t.apiKey}`, "Content-Type: application/json", "Content-Length: 13", header], '{"title":"x"}'),
      );
      expectProblem(r, 400, "malformed_request");
      expect(r.headers["connection"], r.text).toBe("close");
    }
  });

  it("when Content-Length and Transfer-Encoding conflict, or two Content-Lengths differ, then 400 malformed_request", async () => {
    const body = '{"title":"x"}';
    const conflicting = closing(
      "POST",
      "/v1/tasks",
      [`Authorization: Bearer ${t.apiKey}`, "Content-Type: application/json", `Content-Length: ${body.length}`, "Transfer-Encoding: chunked"],
      `d\r\n${body}\r\n0\r\n\r\n`,
    );
    expectProblem(await one(conflicting), 400, "malformed_request");
    const twice = closing(
      "POST",
      "/v1/tasks",
      [`Authorization: Bearer ${t.apiKey}`, "Content-Type: application/json", `Content-Length: ${body.length}`, "Content-Length: 3"],
      body,
    );
    expectProblem(await one(twice), 400, "malformed_request");
  });

  it("when a chunk of the body is malformed, then 400 malformed_request under the request's own id, and no task is created", async () => {
    const bad = closing(
      "POST",
      "/v1/tasks",
      [`Authorization: Bearer ${t.apiKey}`, "Content-Type: application/json", "Transfer-Encoding: chunked"],
      '5\r\n{"tit\r\nzz\r\nle":"x"}\r\n0\r\n\r\n',
    );
    expectProblem(await one(bad), 400, "malformed_request");
    const list = await fetch(new URL("/v1/tasks", target), { headers: { authorization: `Bearer ${t.apiKey}` } });
    const text = await list.text();
    expect(JSON.parse(text).data, text).toEqual([]);
  });

  it("when the request line is not HTTP at all, then 400 malformed_request as a problem", async () => {
    expectProblem(await one("HELLO THERE\r\n\r\n"), 400, "malformed_request");
    expectProblem(await one("GET /healthz HTTP/9.9\r\nHost: x\r\n\r\n"), 400, "malformed_request");
  });

  it("when a malformed request follows a good one on a kept-alive connection, then the first is answered and the second is a problem with its own request id", async () => {
    const [first, second] = await exchange(request("GET", "/healthz") + "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Bad: \u0007\r\n\r\n");
    expect(first?.status, first?.text).toBe(200);
    expect(second, "a second response").toBeDefined();
    expectProblem(second as RawResponse, 400, "malformed_request");
    expect(second?.headers["x-request-id"]).not.toBe(first?.headers["x-request-id"]);
  });
});

describe("the router's refusals", () => {
  it("when the path has a bad percent-encoding (%ZZ, overlong %C0%AE, a surrogate), then 400 malformed_request as a problem", async () => {
    for (const path of ["/v1/tasks/%ZZ", "/v1/projects/%C0%AE", "/v1/tasks/%ED%A0%80", "/v1/nothing/%E2%82"]) {
      const r = await one(closing("GET", path, [`Authorization: Bearer ${t.apiKey}`]));
      expectProblem(r, 400, "malformed_request");
    }
  });

  it("when a query value has a bad percent-encoding, then 400 malformed_request as a problem", async () => {
    for (const path of ["/v1/tasks?project_id=%ZZ", "/v1/tasks?project_id=%C0%AE", "/v1/daily-plan?date=%ED%A0%80"]) {
      const r = await one(closing("GET", path, [`Authorization: Bearer ${t.apiKey}`]));
      expectProblem(r, 400, "malformed_request");
    }
  });

  it("when a path id is longer than 100 characters, then 400 validation_failed naming it (not 414)", async () => {
    for (const [path, pointer] of [
      [`/v1/tasks/${"1".repeat(101)}`, "/task_id"],
      [`/v1/projects/prj_${"x".repeat(5000)}`, "/project_id"],
      [`/v1/organizations/${"o".repeat(300)}`, "/organization_id"],
      [`/v1/tasks/T-1/dependencies/${"2".repeat(200)}`, "/blocker_task_id"],
    ] as const) {
      const r = await one(closing(path.includes("dependencies") ? "DELETE" : "GET", path, [`Authorization: Bearer ${t.apiKey}`]));
      expectProblem(r, 400, "validation_failed");
      expect(
        (r.body.errors ?? []).map((e) => e.pointer),
        r.text,
      ).toContain(pointer);
    }
  });

  it("when a long path id comes without a credential, then 401 missing_credentials as a problem (authentication first)", async () => {
    expectProblem(await one(closing("GET", `/v1/tasks/${"1".repeat(500)}`)), 401, "missing_credentials");
  });
});

describe("Node's other answers", () => {
  it("when an HTTP/1.1 request has no Host header, then 400 malformed_request as a problem", async () => {
    expectProblem(await one("GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n"), 400, "malformed_request");
  });

  it("when the request expects something other than 100-continue, then the expectation is ignored and the request answered", async () => {
    const r = await one(closing("GET", "/healthz", ["Expect: the-unexpected"]));
    expect(r.status, r.text).toBe(200);
    expect(r.headers["x-request-id"], r.text).toMatch(/^req_[0-9a-f]{32}$/);
  });

  it("when a client asks for a CONNECT tunnel, then 404 route_not_found as a problem instead of a dropped connection", async () => {
    expectProblem(await one(`CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n`), 404, "route_not_found");
  });
});
