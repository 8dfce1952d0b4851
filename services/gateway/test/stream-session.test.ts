import { createServer, type ServerResponse } from "node:http";
import { connect, type Socket } from "node:net";
import { eventually, portOf } from "@tasksvc/testing";
import { afterEach, describe, expect, it } from "vitest";
import type { LiveEvent } from "../src/streams/fan-in.js";
import { type EndReason, Session } from "../src/streams/session.js";

// A live event stream's session over a real socket: its order, its filter, and what it does with a
// client that stops reading (the socket's buffers full, then its queue).

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

/** A server whose one response is handed to the test, and a raw client socket that reads only when told. */
async function pair(): Promise<{ res: ServerResponse; socket: Socket; received: () => string }> {
  let resolveRes: (r: ServerResponse) => void = () => undefined;
  const gotRes = new Promise<ServerResponse>((r) => {
    resolveRes = r;
  });
  const server = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    resolveRes(res);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const socket = connect(portOf(server), "127.0.0.1");
  let text = "";
  socket.on("data", (c: Buffer) => {
    text += c.toString("utf8");
  });
  socket.write("GET / HTTP/1.1\r\nhost: x\r\n\r\n");
  cleanups.push(() => {
    socket.destroy();
    server.closeAllConnections();
    server.close();
  });
  return { res: await gotRes, socket, received: () => text };
}

const event = (seq: number, type = "task.created", size = 10): LiveEvent => ({
  seq,
  org: "org_1",
  type,
  id: `evt_${seq}`,
  json: JSON.stringify({ id: `evt_${seq}`, pad: "x".repeat(size) }),
});

function session(res: ServerResponse, opts: { types?: string[]; maxQueued?: number } = {}) {
  const ends: EndReason[] = [];
  const s = new Session({
    res,
    org: "org_1",
    types: opts.types ? new Set(opts.types) : null,
    maxQueued: opts.maxQueued ?? 1000,
    onEnd: (_s, reason) => ends.push(reason),
  });
  s.started = true;
  return { s, ends };
}

describe("a live event stream's session", () => {
  it("when events arrive out of the stream's order or twice, then each is sent once, in order, and only the types asked for", async () => {
    const { res, received } = await pair();
    const { s } = session(res, { types: ["task.created"] });
    s.live = true;
    for (const e of [event(1), event(2), event(2), event(1), event(3, "task.updated"), event(4)]) s.deliver(e);
    await eventually(() => received().includes("evt_4"));
    const ids = [...received().matchAll(/^id: (\S+)$/gm)].map((m) => m[1]);
    expect(ids).toEqual(["evt_1", "evt_2", "evt_4"]);
    expect(received()).toContain('event: task.created\ndata: {"id":"evt_1"');
  });

  it("when a client stops reading, then it is held up to its queue's bound, then told to resume and closed, its last full message intact", async () => {
    const { res, socket, received } = await pair();
    socket.pause();
    const { s, ends } = session(res, { maxQueued: 20 });
    s.live = true;
    // 64 KiB messages fill the socket's buffers after a few dozen; then the queue fills.
    let seq = 0;
    while (!s.ended && seq < 10_000) s.deliver(event(++seq, "task.created", 64 * 1024));
    expect(s.ended).toBe(true);
    expect(ends).toEqual(["lagging"]);
    socket.resume();
    await eventually(() => received().includes("too far behind"), { what: "the comment that says to resume" });
    const text = received();
    const ids = [...text.matchAll(/^id: (\S+)$/gm)].map((m) => Number(m[1]?.slice(4)));
    // Every message before the comment whole and in order; none of those that waited in the queue.
    expect(ids).toEqual(Array.from({ length: ids.length }, (_, i) => i + 1));
    expect(ids.length).toBeLessThan(seq - 20);
    // The comment after the last message, then the response's end (its chunked encoding's last chunk).
    expect(text.lastIndexOf("too far behind")).toBeGreaterThan(text.lastIndexOf("id: evt_"));
    await eventually(() => received().endsWith("0\r\n\r\n"), { what: "the response to end" });
  });

  it("when the client goes away, then the session ends once, as the client's doing", async () => {
    const { res, socket } = await pair();
    const { s, ends } = session(res);
    socket.destroy();
    await eventually(() => s.ended);
    s.end("shutdown", "late");
    expect(ends).toEqual(["client"]);
  });
});
