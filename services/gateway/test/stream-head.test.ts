import { connect, type Socket } from "node:net";
import { keysRpc, systemContext, tasksRpc, type RpcContext, type Page } from "@tasksvc/contracts";
import { createDb } from "@tasksvc/db";
import { createLogger } from "@tasksvc/logger";
import { client, connectNats, type NatsConnection } from "@tasksvc/nats";
import { api, eventually, factories, gatewayUrl, portOf } from "@tasksvc/testing";
import Fastify, { type FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createAuthenticator } from "../src/auth.js";
import { gatewayRepo } from "../src/repo/gateway-repo.js";
import { createEventStreams, type EventStreams } from "../src/streams/event-streams.js";
import { createFanIn } from "../src/streams/fan-in.js";
import { ownIssuer } from "./own-issuer.js";

// A live event stream's head (status, Content-Type text/event-stream) goes out before any byte of
// its body, however long the replay of a resuming client takes to start: a keep-alive written
// first would make Node send a 200 without Content-Type, and a browser's EventSource would then
// fail for good instead of reconnecting. The replay is held back here by a gate on the real tasks
// client, while the heartbeat runs every 20 ms (real NATS, Postgres and keys service).

const stack = inject("stack");
const f = factories(stack);
const gw = api(gatewayUrl(stack));
const log = createLogger({ service: "stream-head-test", level: "silent" });
const db = createDb({ url: stack.databaseUrl, schema: "gateway", max: 2 });

let nc: NatsConnection;
let app: FastifyInstance;
let streams: EventStreams;
let base: { port: number };
/** Opened by the test: until then, every replay read waits. */
let openGate: () => void = () => undefined;
let gate = new Promise<void>((r) => {
  openGate = r;
});
/** Resolves when a replay read has reached the gate. */
let reachedGate: () => void = () => undefined;
const atGate = new Promise<void>((r) => {
  reachedGate = r;
});

beforeAll(async () => {
  const oauthIssuer = await ownIssuer();
  nc = await connectNats({ url: stack.natsUrl, name: "stream-head-test" });
  const { namespace } = stack;
  const keys = client(nc, keysRpc, { namespace, timeoutMs: 5000 });
  const tasks = client(nc, tasksRpc, { namespace, timeoutMs: 5000 });
  const auth = createAuthenticator({ nc, namespace, keys, log, issuer: "tasksvc-dev", audience: "tasksvc-api", cacheTtlMs: 5000, ours: oauthIssuer });
  streams = createEventStreams({
    fanIn: createFanIn({ nc, namespace, log }),
    tasks: {
      call: (async (op: Parameters<typeof tasks.call>[0], input: never, ctx: RpcContext) => {
        if (op === "replayEvents") {
          reachedGate();
          await gate;
        }
        return tasks.call(op, input, ctx);
      }) as typeof tasks.call,
    },
    auth,
    repo: gatewayRepo(db.sql),
    log,
    heartbeatMs: 20,
  });
  app = Fastify();
  app.get("/stream", async (req, reply) => {
    const identity = await auth.authenticate(req.headers.authorization, systemContext(String(req.id)));
    const ctx: RpcContext = {
      request_id: String(req.id),
      organization_id: identity.organization_id,
      user_id: identity.user_id,
      credential_id: identity.credential_id,
      scopes: identity.scopes,
      plan: identity.plan,
    };
    await streams.serve(req, reply, { query: {}, identity, ctx });
    return reply;
  });
  await app.listen({ port: 0, host: "127.0.0.1" });
  base = { port: portOf(app.server) };
});

afterAll(async () => {
  openGate();
  await streams.stop();
  await app.close();
  await nc.close();
  await db.end({ timeout: 1 });
  await f.close();
});

/** A raw client socket that records every byte it receives, from the very first. */
function rawStream(token: string, lastEventId?: string): { socket: Socket; received: () => string } {
  const socket = connect(base.port, "127.0.0.1");
  let text = "";
  socket.on("data", (c: Buffer) => {
    text += c.toString("latin1");
  });
  socket.write(
    `GET /stream HTTP/1.1\r\nhost: test\r\nauthorization: Bearer ${token}\r\naccept: text/event-stream\r\n${lastEventId ? `last-event-id: ${lastEventId}\r\n` : ""}\r\n`,
  );
  return { socket, received: () => text };
}

const keepAlives = (text: string) => text.split(": keep-alive\n\n").length - 1;

describe("a live event stream's head", () => {
  it("when a resumed stream's replay is slow to start while heartbeats run, then nothing is sent before the head, and its first bytes are the head with Content-Type text/event-stream", async () => {
    const t = await f.tenant();
    const created = await gw.post("/v1/tasks", { title: "Before the reconnect" }, { token: t.apiKey });
    expect(created.status, created.text).toBe(201);
    const lastEventId = await eventually(
      async () => {
        const page = await gw.get<Page<{ id: string }>>("/v1/events?limit=1", { token: t.apiKey });
        return page.body.data[0]?.id ?? false;
      },
      { what: "the task's event in the feed" },
    );

    // A stream that is live already shows the heartbeat running.
    const live = rawStream(t.apiKey);
    await eventually(() => live.received().startsWith("HTTP/1.1 200") && keepAlives(live.received()) > 0, { what: "the live stream's first keep-alive" });

    gate = new Promise<void>((r) => {
      openGate = r;
    });
    const resumed = rawStream(t.apiKey, lastEventId);
    await atGate;
    // Several heartbeats pass while the resumed stream waits for its replay.
    const seen = keepAlives(live.received());
    await eventually(() => keepAlives(live.received()) >= seen + 5, { what: "five more heartbeats" });
    expect(resumed.received()).toBe("");

    openGate();
    await eventually(() => resumed.received().includes("\r\n\r\n"), { what: "the resumed stream's head" });
    const text = resumed.received();
    const head = text.slice(0, text.indexOf("\r\n\r\n"));
    expect(head.split("\r\n")[0]).toBe("HTTP/1.1 200 OK");
    expect(head.toLowerCase()).toContain("content-type: text/event-stream; charset=utf-8");
    // Then the stream itself: the retry hint, then the replayed event.
    await eventually(() => resumed.received().includes("event: task.created") || resumed.received().includes("retry: 1000"), {
      what: "the stream's first message",
    });
    live.socket.destroy();
    resumed.socket.destroy();
  });
});
