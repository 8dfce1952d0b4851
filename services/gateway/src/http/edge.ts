import { STATUS_CODES, maxHeaderSize, type IncomingMessage, type ServerResponse } from "node:http";
import { Socket } from "node:net";
import type { Duplex } from "node:stream";
import { AppError, toProblem } from "@tasksvc/errors";
import type { Logger } from "@tasksvc/logger";
import { httpEdgeRefused } from "@tasksvc/telemetry";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { EVERY_ANSWER_HEADERS, fieldCount, newRequestId } from "./requests.js";
import { lingeringClose, lingerWhenUnread } from "./sockets.js";

/**
 * What Node and fastify answer on their own before any route runs, as problem+json (decision
 * 0010). A request Node cannot parse comes with no request object: the response is written raw on
 * the socket and the connection closed, since the parser cannot tell where the next request starts.
 */

export function clientErrorProblem(err: Error & { code?: string; reason?: string }): AppError | undefined {
  const reason = (err.reason ?? err.message).replace(/[^\x20-\x7E]/g, "?").slice(0, 200);
  switch (err.code) {
    case "HPE_HEADER_OVERFLOW":
      return new AppError("headers_too_large", `The request line and headers together exceed ${maxHeaderSize} bytes.`);
    case "HPE_CHUNK_EXTENSIONS_OVERFLOW":
      return new AppError("payload_too_large", "The chunk extensions of the request body are too large.");
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return new AppError("request_timeout", "The request was not received completely in time.");
    default:
      // llhttp's errors (HPE_*) are the client's malformed message; anything else is the
      // connection itself failing (ECONNRESET, EPIPE, ...), with nobody left to answer.
      return err.code?.startsWith("HPE_") ? new AppError("malformed_request", `The HTTP request could not be parsed: ${reason}.`) : undefined;
  }
}

export function rawProblemResponse(err: AppError, requestId: string, typeBase: string): string {
  const body = JSON.stringify(toProblem(err, requestId, typeBase));
  return [
    `HTTP/1.1 ${err.status} ${STATUS_CODES[err.status] ?? "Error"}`,
    "Content-Type: application/problem+json; charset=utf-8",
    `Content-Length: ${Buffer.byteLength(body)}`,
    `x-request-id: ${requestId}`,
    ...Object.entries(EVERY_ANSWER_HEADERS).map(([k, v]) => `${k}: ${v}`),
    "Connection: close",
    "",
    body,
  ].join("\r\n");
}

/**
 * Node hands every pipelined request to the app at once: a client writing hundreds in one packet
 * would have them all executed and their answers queued in memory. Past this many, 429 with
 * `Connection: close`, and nothing behind it runs.
 */
export const MAX_PIPELINED = 16;

/** The returned `clientErrorHandler` must be given to the Fastify constructor: it cannot be set afterwards. */
export function edgeHandling(log: Logger, publicBaseUrl: () => string) {
  // A parse error in the executing request's body is answered under its id (or not at all once its
  // response has begun); one in a request pipelined behind it, after its response, under a new id.
  const current = new WeakMap<Duplex, { req: IncomingMessage; res: ServerResponse }>();
  // Node may report several parse errors for one connection: answer the first only.
  const answered = new WeakSet<Duplex>();
  // The clientError handler can run before fastify has seen a request whose body arrived broken in the same packet.
  const ids = new WeakMap<IncomingMessage, string>();
  const inProgress = new WeakMap<Duplex, number>();
  const overrun = new WeakSet<Duplex>();
  // Node goes on parsing during the lingering close after a 408: should the rest of the body arrive,
  // the route must not run for a request already refused.
  const abandoned = new WeakSet<IncomingMessage>();
  let closing = false;

  function requestId(req: IncomingMessage): string {
    let id = ids.get(req);
    if (id === undefined) {
      id = newRequestId();
      ids.set(req, id);
    }
    return id;
  }

  function clientErrorHandler(err: Error & { code?: string }, socket: Duplex): void {
    if (answered.has(socket)) return;
    answered.add(socket);
    if (socket.destroyed || err.code === "ECONNRESET") {
      socket.destroy();
      return;
    }
    const problem = clientErrorProblem(err);
    if (!problem || !socket.writable) {
      socket.destroy();
      return;
    }
    const answer = (requestId: string) => {
      httpEdgeRefused.labels({ reason: edgeReason(problem.code) }).inc();
      log.info({ request_id: requestId, status: problem.status, code: problem.code, parser_error: err.code }, "request refused at the HTTP edge");
      lingeringClose(socket, rawProblemResponse(problem, requestId, publicBaseUrl()));
    };
    const inFlight = current.get(socket);
    if (inFlight === undefined || inFlight.res.writableEnded) {
      answer(newRequestId());
      return;
    }
    if (inFlight.req.complete) {
      // Pipelined behind a complete request still being answered: that response goes out first.
      let done = false;
      const after = () => {
        if (done) return;
        done = true;
        if (socket.writable) answer(newRequestId());
        else socket.destroy();
      };
      inFlight.res.once("finish", after).once("close", after);
      return;
    }
    abandoned.add(inFlight.req);
    if (inFlight.res.headersSent) socket.destroy();
    else answer(requestId(inFlight.req));
  }

  function refusePipelined(req: IncomingMessage, res: ServerResponse): void {
    overrun.add(req.socket);
    const id = requestId(req);
    const problem = new AppError(
      "rate_limited",
      `More than ${MAX_PIPELINED} requests were pipelined on one connection: wait for answers before sending more, or open another connection.`,
      { retryAfter: 1 },
    );
    const body = JSON.stringify(toProblem(problem, id, publicBaseUrl()));
    httpEdgeRefused.labels({ reason: "pipelined" }).inc();
    log.info({ request_id: id, status: problem.status, code: problem.code }, "request refused at the HTTP edge");
    res.writeHead(problem.status, {
      "content-type": "application/problem+json; charset=utf-8",
      "content-length": Buffer.byteLength(body),
      "x-request-id": id,
      ...EVERY_ANSWER_HEADERS,
      "retry-after": "1",
      connection: "close",
    });
    res.end(body);
  }

  function install(app: FastifyInstance): void {
    app.addHook("preClose", (done) => {
      closing = true;
      done();
    });
    // In front of fastify's own listener. The executing request is known synchronously, since the
    // parser may fail on the bytes right behind it within the same read.
    const handlers = app.server.listeners("request") as Array<(req: IncomingMessage, res: ServerResponse) => void>;
    app.server.removeAllListeners("request");
    app.server.on("request", (req: IncomingMessage, res: ServerResponse) => {
      const socket = req.socket;
      if (!current.has(socket) && socket instanceof Socket) lingerWhenUnread(socket, () => current.get(socket)?.req);
      current.set(socket, { req, res });
      // Behind a refusal nothing runs: its Connection: close ends the connection once it is out.
      if (overrun.has(socket)) return;
      const open = inProgress.get(socket) ?? 0;
      if (open >= MAX_PIPELINED) {
        refusePipelined(req, res);
        return;
      }
      inProgress.set(socket, open + 1);
      let counted = true;
      const finished = () => {
        if (!counted) return;
        counted = false;
        inProgress.set(socket, Math.max(0, (inProgress.get(socket) ?? 1) - 1));
      };
      res.once("finish", finished).once("close", finished);
      for (const handler of handlers) handler.call(app.server, req, res);
    });
    // After the body is read, before any route runs: a request answered 408 meanwhile stops here.
    app.addHook("preValidation", (req, reply, done) => {
      if (abandoned.has(req.raw)) reply.hijack();
      done();
    });
    // A callback hook: no promise per request for checks that never wait.
    app.addHook("onRequest", (req, _reply, done) => done(edgeRefusal(req)));
    function edgeRefusal(req: FastifyRequest): AppError | undefined {
      if (closing) {
        // Fastify's own answer here would be a bare JSON 503; fastify already set Connection: close.
        return new AppError("service_unavailable", "This gateway replica is shutting down; retry, another replica will answer.", { retryAfter: 1 });
      }
      // Node's own check answers 400 with no body: the server is built with requireHostHeader off.
      if (req.raw.httpVersionMajor === 1 && req.raw.httpVersionMinor === 1 && req.headers.host === undefined) {
        return new AppError("malformed_request", "An HTTP/1.1 request must carry a Host header (RFC 9112 section 3.2).");
      }
      // Node keeps the first Authorization field and drops the others: which credential a request
      // carries must not depend on which one a proxy or a server happens to read.
      if (fieldCount(req.raw.rawHeaders, "authorization") > 1) {
        httpEdgeRefused.labels({ reason: "malformed" }).inc();
        return new AppError("malformed_request", "The request carries more than one Authorization header field; send exactly one credential.");
      }
      // The router refuses a malformed path, but the query parser keeps an undecodable value as its raw text.
      const q = req.url.indexOf("?");
      if (q !== -1 && !isPercentEncodedUtf8(req.url.slice(q + 1))) {
        return new AppError("malformed_request", "The query string is not valid percent-encoded UTF-8.");
      }
      return undefined;
    }

    // An Expect other than 100-continue: Node would answer 417 with no body, and RFC 9110 section 10.1.1
    // lets a server ignore an expectation it does not support.
    app.server.on("checkExpectation", (req: IncomingMessage, res: ServerResponse) => {
      app.server.emit("request", req, res);
    });
    // CONNECT (a proxy tunnel): Node would drop the connection without a word.
    app.server.on("connect", (req: IncomingMessage, socket: Duplex) => {
      const requestId = newRequestId();
      const problem = new AppError("route_not_found", "This API is not a proxy: CONNECT is not supported.");
      log.info({ request_id: requestId, method: req.method, status: problem.status }, "request refused at the HTTP edge");
      lingeringClose(socket, rawProblemResponse(problem, requestId, publicBaseUrl()));
    });
  }

  return { clientErrorHandler, install, requestId };
}

function isPercentEncodedUtf8(s: string): boolean {
  try {
    decodeURIComponent(s);
    return true;
  } catch {
    return false;
  }
}

function edgeReason(code: string): "body_timeout" | "too_large" | "malformed" {
  if (code === "request_timeout") return "body_timeout";
  if (code === "headers_too_large" || code === "payload_too_large") return "too_large";
  return "malformed";
}
