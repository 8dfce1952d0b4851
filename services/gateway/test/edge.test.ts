import { connect } from "node:net";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bareGateway } from "./bare.js";
import { clientErrorProblem, rawProblemResponse } from "../src/http/edge.js";
import { AppError } from "@tasksvc/errors";

const parserError = (code: string, reason = "Invalid header value char") => Object.assign(new Error(`Parse Error: ${reason}`), { code, reason });

describe("clientErrorProblem (Node's clientError → catalog)", () => {
  it("when the parser reports oversized headers, a timeout or huge chunk extensions, then 431, 408 and 413", () => {
    expect(clientErrorProblem(parserError("HPE_HEADER_OVERFLOW"))?.code).toBe("headers_too_large");
    expect(clientErrorProblem(Object.assign(new Error("timeout"), { code: "ERR_HTTP_REQUEST_TIMEOUT" }))?.code).toBe("request_timeout");
    expect(clientErrorProblem(parserError("HPE_CHUNK_EXTENSIONS_OVERFLOW"))?.code).toBe("payload_too_large");
  });

  it("when the parser reports any other malformed message, then 400 malformed_request quoting its reason in printable ASCII", () => {
    const p = clientErrorProblem(parserError("HPE_INVALID_CHUNK_SIZE", "Invalid character\u0000 in chunk size"));
    expect(p?.code).toBe("malformed_request");
    expect(p?.detail).toBe("The HTTP request could not be parsed: Invalid character? in chunk size.");
  });

  it("when the connection itself fails (reset, broken pipe), then there is nobody to answer", () => {
    expect(clientErrorProblem(Object.assign(new Error("reset"), { code: "ECONNRESET" }))).toBeUndefined();
    expect(clientErrorProblem(Object.assign(new Error("pipe"), { code: "EPIPE" }))).toBeUndefined();
  });

  it("when a problem is rendered raw, then it is one HTTP/1.1 response with problem+json, x-request-id, nosniff, no-store and Connection: close", () => {
    const raw = rawProblemResponse(new AppError("malformed_request", "bad"), "req_0123456789abcdef0123456789abcdef", "https://api.example.com");
    const [head, body] = raw.split("\r\n\r\n") as [string, string];
    expect(head.split("\r\n")).toEqual([
      "HTTP/1.1 400 Bad Request",
      "Content-Type: application/problem+json; charset=utf-8",
      `Content-Length: ${Buffer.byteLength(body)}`,
      "x-request-id: req_0123456789abcdef0123456789abcdef",
      "x-content-type-options: nosniff",
      "cache-control: no-store",
      "Connection: close",
    ]);
    expect(JSON.parse(body)).toEqual({
      type: "https://api.example.com/docs/errors#malformed_request",
      title: "Malformed request",
      status: 400,
      code: "malformed_request",
      detail: "bad",
    });
  });
});

describe("a gateway replica that is closing", () => {
  // Only /healthz and a test route are called: the pipeline's collaborators are never reached.
  let app: FastifyInstance;
  let release: () => void = () => {};
  let entered: Promise<void>;
  let closingStarted: Promise<void>;
  let healthzAnswered: Promise<void>;

  beforeAll(async () => {
    app = bareGateway({ resources: [] });
    entered = new Promise<void>((resolveEntered) => {
      app.get("/test-only/hold", async () => {
        resolveEntered();
        await new Promise<void>((r) => (release = r));
        return { held: true };
      });
    });
    closingStarted = new Promise<void>((r) =>
      app.addHook("preClose", (done) => {
        r();
        done();
      }),
    );
    healthzAnswered = new Promise<void>((r) =>
      app.addHook("onSend", async (req) => {
        if (req.url === "/healthz") r();
      }),
    );
    await app.listen({ port: 0, host: "127.0.0.1" });
  });
  afterAll(async () => {
    release();
    await app.close();
  });

  it("when a request arrives on an open connection during close, then 503 service_unavailable as a problem with Connection: close", async () => {
    const address = app.server.address();
    const port = typeof address === "object" && address ? address.port : 0;
    const socket = connect({ host: "127.0.0.1", port });
    const chunks: Buffer[] = [];
    socket.on("data", (c: Buffer) => chunks.push(c));
    const ended = new Promise<void>((r) => socket.on("close", () => r()));
    socket.write("GET /test-only/hold HTTP/1.1\r\nHost: x\r\n\r\n");
    await entered;
    const closed = app.close();
    await closingStarted;
    // Pipelined behind the held request, on a connection the server cannot drop while it is busy.
    socket.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    // Node hands the pipelined request over at once; its answer waits behind the held one.
    await healthzAnswered;
    release();
    await closed;
    await ended;
    const text = Buffer.concat(chunks).toString("utf8");
    const second = text.slice(text.indexOf("HTTP/1.1", 1));
    expect(text, text).toMatch(/^HTTP\/1\.1 200 /);
    expect(second, text).toMatch(/^HTTP\/1\.1 503 /);
    expect(second.toLowerCase(), text).toContain("content-type: application/problem+json");
    expect(second.toLowerCase(), text).toContain("connection: close");
    expect(second, text).toMatch(/x-request-id: req_[0-9a-f]{32}/);
    expect(JSON.parse(second.slice(second.indexOf("\r\n\r\n") + 4)), text).toMatchObject({ code: "service_unavailable", status: 503 });
  });
});

describe("a request refused before it was all read", () => {
  let app: FastifyInstance;
  beforeAll(async () => {
    app = bareGateway({ resources: [] });
    app.post("/test-only/body", async () => ({ read: true }));
    await app.listen({ port: 0, host: "127.0.0.1" });
  });

  /**
   * Sends `bytes` in 64 KiB writes whatever comes back, keeping its side open after the server's
   * FIN as curl does; ends once the server has ended. What was written back, and write errors.
   */
  async function sendAll(bytes: Buffer) {
    const address = app.server.address();
    const port = typeof address === "object" && address ? address.port : 0;
    const socket = connect({ host: "127.0.0.1", port, allowHalfOpen: true });
    const chunks: Buffer[] = [];
    socket.on("data", (c: Buffer) => chunks.push(c));
    const errors: string[] = [];
    socket.on("error", (e: NodeJS.ErrnoException) => errors.push(e.code ?? e.message));
    const closed = new Promise<void>((r) => socket.on("close", () => r()));
    const serverEnded = new Promise<void>((r) => socket.on("end", () => r()));
    for (let at = 0; at < bytes.length && !socket.destroyed; at += 65_536) {
      await new Promise<void>((resolve) => socket.write(bytes.subarray(at, at + 65_536), () => resolve()));
    }
    await serverEnded;
    socket.end();
    await closed;
    return { errors, text: Buffer.concat(chunks).toString("utf8") };
  }

  it("when a client goes on sending a body past the limit after its 413, then every write is taken and the answer arrives", async () => {
    const body = Buffer.alloc(6 * 1024 * 1024, "x");
    for (let round = 0; round < 5; round++) {
      const head = Buffer.from(`POST /test-only/body HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
      const r = await sendAll(Buffer.concat([head, body]));
      expect(r.errors, r.text).toEqual([]);
      expect(r.text).toMatch(/^HTTP\/1\.1 413 /);
    }
  });
  afterAll(async () => {
    await app.close();
  });

  it("when a client goes on sending a 1 MiB request line after its 431, then every write is taken, the answer arrives, and the connection closes once the client ends", async () => {
    // Closing at once would make the kernel reset the client's later writes (EPIPE), and a client
    // that fails a write may never read the answer that already arrived. This client, like curl,
    // keeps its side open and goes on writing after the server's FIN.
    for (let round = 0; round < 5; round++) {
      const { errors, text } = await sendAll(Buffer.from(`GET /v1/tasks?q=${"%5B".repeat(2_000_000)} HTTP/1.1\r\nHost: x\r\n\r\n`, "latin1"));
      expect(errors, text).toEqual([]);
      expect(text).toMatch(/^HTTP\/1\.1 431 /);
      expect(JSON.parse(text.slice(text.indexOf("\r\n\r\n") + 4))).toMatchObject({ code: "headers_too_large", status: 431 });
    }
  });
});
