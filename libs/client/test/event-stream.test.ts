import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { eventually, must, portOf, rejectionOf } from "@tasksvc/testing";
import { afterEach, describe, expect, it } from "vitest";
import { createClient, type Schemas, TasksvcError } from "../src/index.js";

// The client's event stream against a real HTTP server that speaks Server-Sent Events from a
// script, one handler per connection: it stands in for the gateway's GET /v1/events/stream.

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

interface Seen {
  url: URL;
  headers: IncomingMessage["headers"];
  /** Set when the connection of this request closed (the client cancelled it, or the server ended it). */
  closed: boolean;
}

const servers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((close) => close()));
});

/** A server that answers the n-th request with handlers[n] (the last one again after the end). */
async function scripted(handlers: Handler[]) {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    const s: Seen = { url: new URL(req.url ?? "/", "http://localhost"), headers: req.headers, closed: false };
    seen.push(s);
    res.on("close", () => {
      s.closed = true;
    });
    must(handlers[Math.min(seen.length, handlers.length) - 1], "a handler")(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  servers.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { baseUrl: `http://127.0.0.1:${portOf(server)}`, seen };
}

/** Polls until `check` holds (generous deadline: the machine may be busy). */
async function until(check: () => boolean): Promise<void> {
  await eventually(check, { intervalMs: 10 });
}

const event = (n: number, type: Schemas["Event"]["type"] = "task.updated"): Schemas["Event"] =>
  ({ id: `evt_${n}`, type, timestamp: "2026-11-23T09:30:00.000Z", data: { id: `T-${n}`, title: `Task ${n}` } }) as Schemas["Event"];
const message = (e: Schemas["Event"]) => `id: ${e.id}\nevent: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`;

/** Answers 200 text/event-stream, writes `chunks`, then ends the stream when `end` (else leaves it open). */
const stream =
  (chunks: string[], end = false): Handler =>
  (_req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-store" });
    for (const c of chunks) res.write(c);
    if (end) res.end();
  };
const problem =
  (status: number, code: string, headers: Record<string, string> = {}): Handler =>
  (_req, res) => {
    res.writeHead(status, { "content-type": "application/problem+json", "x-request-id": "req_1", ...headers });
    res.end(JSON.stringify({ type: "about:blank", title: "Problem", status, code, detail: `${code} here` }));
  };

/** The first `n` events of the stream, then a break out of the loop. */
async function take(events: AsyncGenerator<Schemas["Event"]>, n: number): Promise<Schemas["Event"][]> {
  const got: Schemas["Event"][] = [];
  if (n === 0) return got;
  for await (const e of events) {
    got.push(e);
    if (got.length >= n) break;
  }
  return got;
}

describe("api.streamEvents", () => {
  it("yields the messages in order, as sent in pieces, and ignores comments", async () => {
    const all = message(event(1, "task.created")) + message(event(2)) + message(event(3, "task.archived"));
    const cut = all.indexOf("data:", 40) + 9;
    const server = await scripted([stream([": keep-alive\n\n", all.slice(0, cut), all.slice(cut), ": keep-alive\n\n"])]);
    const api = createClient({ baseUrl: server.baseUrl, token: "svc_test" });
    const got = await take(api.streamEvents(), 3);
    expect(got).toEqual([event(1, "task.created"), event(2), event(3, "task.archived")]);
    expect(server.seen).toHaveLength(1);
    expect(server.seen[0]?.headers.authorization).toBe("Bearer svc_test");
    expect(server.seen[0]?.headers.accept).toBe("text/event-stream");
    expect(server.seen[0]?.headers["last-event-id"]).toBeUndefined();
  });

  it("sends the types as one comma-separated `type` and `after` as the query", async () => {
    const server = await scripted([stream([message(event(8))])]);
    const api = createClient({ baseUrl: `${server.baseUrl}/`, token: "svc_test" });
    await take(api.streamEvents({ types: ["task.created", "task.updated"], after: "evt_7" }), 1);
    const url = server.seen[0]?.url;
    expect(url?.pathname).toBe("/v1/events/stream");
    expect(url?.searchParams.get("type")).toBe("task.created,task.updated");
    expect(url?.searchParams.get("after")).toBe("evt_7");
    expect(server.seen[0]?.headers["last-event-id"]).toBeUndefined();
  });

  it("when the server closes the stream, reconnects with Last-Event-ID = the last id yielded", async () => {
    const server = await scripted([
      stream([message(event(1)), message(event(2)), ": too far behind, resume from the last event id\n\n"], true),
      stream([message(event(3))]),
    ]);
    const api = createClient({ baseUrl: server.baseUrl, token: "svc_test" });
    const got = await take(api.streamEvents({ types: ["task.updated"], reconnectDelayMs: 10 }), 3);
    expect(got.map((e) => e.id)).toEqual(["evt_1", "evt_2", "evt_3"]);
    expect(server.seen).toHaveLength(2);
    expect(server.seen[1]?.headers["last-event-id"]).toBe("evt_2");
    expect(server.seen[1]?.url.searchParams.get("type")).toBe("task.updated");
  });

  it("when the connection is cut mid-stream, reconnects with Last-Event-ID", async () => {
    const server = await scripted([
      (req, res) => {
        stream([message(event(1)), "id: evt_2\nevent: task.upd"])(req, res);
        setTimeout(() => req.socket.destroy(), 50);
      },
      stream([message(event(2))]),
    ]);
    const api = createClient({ baseUrl: server.baseUrl, token: "svc_test" });
    const got = await take(api.streamEvents({ reconnectDelayMs: 10 }), 2);
    expect(got.map((e) => e.id)).toEqual(["evt_1", "evt_2"]);
    expect(server.seen[1]?.headers["last-event-id"]).toBe("evt_1");
  });

  it("when it yielded nothing before the stream ended, reconnects with Last-Event-ID = the original after", async () => {
    const server = await scripted([stream([": shutting down\n\n"], true), stream([message(event(6))])]);
    const api = createClient({ baseUrl: server.baseUrl, token: "svc_test" });
    const got = await take(api.streamEvents({ after: "evt_5", reconnectDelayMs: 10 }), 1);
    expect(got.map((e) => e.id)).toEqual(["evt_6"]);
    expect(server.seen[1]?.headers["last-event-id"]).toBe("evt_5");
  });

  it("reconnects after a 503 (with or without Retry-After), keeping Last-Event-ID", async () => {
    const server = await scripted([
      stream([message(event(1))], true),
      problem(503, "service_unavailable", { "retry-after": "0" }),
      problem(503, "service_unavailable"),
      stream([message(event(2))]),
    ]);
    const api = createClient({ baseUrl: server.baseUrl, token: "svc_test" });
    const got = await take(api.streamEvents({ reconnectDelayMs: 10 }), 2);
    expect(got.map((e) => e.id)).toEqual(["evt_1", "evt_2"]);
    expect(server.seen).toHaveLength(4);
    expect(server.seen.slice(1).map((s) => s.headers["last-event-id"])).toEqual(["evt_1", "evt_1", "evt_1"]);
  });

  it("reconnects after a 429 with Retry-After: 0", async () => {
    const server = await scripted([problem(429, "rate_limited", { "retry-after": "0" }), stream([message(event(1))])]);
    const api = createClient({ baseUrl: server.baseUrl, token: "svc_test" });
    const got = await take(api.streamEvents({ reconnectDelayMs: 10 }), 1);
    expect(got.map((e) => e.id)).toEqual(["evt_1"]);
    expect(server.seen).toHaveLength(2);
  });

  it("throws a TasksvcError with the problem's code on a 429 that asks for a longer wait than maxRetryAfterMs", async () => {
    const server = await scripted([problem(429, "quota_exhausted", { "retry-after": "86400" })]);
    const api = createClient({ baseUrl: server.baseUrl, token: "svc_test" });
    const err = await rejectionOf(take(api.streamEvents(), 1), TasksvcError);
    expect(err).toBeInstanceOf(TasksvcError);
    expect(err.code).toBe("quota_exhausted");
    expect(server.seen).toHaveLength(1);
  });

  it.each([
    [401, "unauthorized"],
    [403, "insufficient_scope"],
    [400, "validation_failed"],
  ])("throws a TasksvcError on a %i, with its code, and does not reconnect", async (status, code) => {
    const server = await scripted([problem(status, code)]);
    const api = createClient({ baseUrl: server.baseUrl, token: "svc_test" });
    const err = await rejectionOf(take(api.streamEvents({ reconnectDelayMs: 10 }), 1), TasksvcError);
    expect(err).toBeInstanceOf(TasksvcError);
    expect(err.status).toBe(status);
    expect(err.code).toBe(code);
    expect(err.requestId).toBe("req_1");
    expect(server.seen).toHaveLength(1);
  });

  it("throws on a 400 for an unknown Last-Event-ID on a reconnect, after the events it yielded", async () => {
    const server = await scripted([stream([message(event(1))], true), problem(400, "validation_failed")]);
    const api = createClient({ baseUrl: server.baseUrl, token: "svc_test" });
    const got: string[] = [];
    const err = await rejectionOf(
      (async () => {
        for await (const e of api.streamEvents({ reconnectDelayMs: 10 })) got.push(e.id);
      })(),
      TasksvcError,
    );
    expect(got).toEqual(["evt_1"]);
    expect(err.code).toBe("validation_failed");
  });

  it("a break out of the loop cancels the connection: the server sees it close, and no reconnect follows", async () => {
    const server = await scripted([stream([message(event(1)), message(event(2))])]);
    const api = createClient({ baseUrl: server.baseUrl, token: "svc_test" });
    await take(api.streamEvents({ reconnectDelayMs: 10 }), 1);
    await until(() => server.seen[0]?.closed === true);
    // A window, not a wait for anything: ten reconnect delays, in which a reconnect would have
    // come; what must not happen gives no condition to poll for.
    await new Promise((r) => setTimeout(r, 100));
    expect(server.seen).toHaveLength(1);
  });

  it("aborting the signal while it waits for the next event ends the loop quietly and closes the connection", async () => {
    const server = await scripted([stream([message(event(1))])]);
    const api = createClient({ baseUrl: server.baseUrl, token: "svc_test" });
    const controller = new AbortController();
    const got: string[] = [];
    const loop = (async () => {
      for await (const e of api.streamEvents({ signal: controller.signal })) {
        got.push(e.id);
        setTimeout(() => controller.abort(), 20);
      }
    })();
    await expect(loop).resolves.toBeUndefined();
    expect(got).toEqual(["evt_1"]);
    await until(() => server.seen[0]?.closed === true);
  });

  it("aborting the signal during a reconnect wait ends the loop quietly", async () => {
    const server = await scripted([problem(503, "service_unavailable")]);
    const api = createClient({ baseUrl: server.baseUrl, token: "svc_test", maxDelayMs: 60_000 });
    const controller = new AbortController();
    const loop = take(api.streamEvents({ signal: controller.signal, reconnectDelayMs: 60_000 }), 1);
    await until(() => server.seen.length === 1);
    controller.abort();
    await expect(loop).resolves.toEqual([]);
    expect(server.seen).toHaveLength(1);
  });

  it("with a signal already aborted, yields nothing and sends no request", async () => {
    const server = await scripted([stream([message(event(1))])]);
    const api = createClient({ baseUrl: server.baseUrl, token: "svc_test" });
    await expect(take(api.streamEvents({ signal: AbortSignal.abort() }), 1)).resolves.toEqual([]);
    expect(server.seen).toHaveLength(0);
  });
});
