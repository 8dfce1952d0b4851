import { headers as natsHeaders, type Msg, type MsgHdrs, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import {
  type RawJson,
  type ReplyHeaders,
  RpcRequest,
  rpcSubject,
  type OpName,
  type OpOutput,
  type OpParsedInput,
  type RpcCatalog,
  type RpcContext,
  type RpcReply,
} from "@tasksvc/contracts";
import { AppError, isAppError, validationError } from "@tasksvc/errors";
import type { Logger } from "@tasksvc/logger";
import {
  extractContext,
  inSpan,
  rpcDeadlineExpired,
  rpcReplyTooLarge,
  rpcServerDuration,
  rpcServerInFlight,
  seriesCache,
  SpanKind,
  SpanStatusCode,
  tracingEnabled,
} from "@tasksvc/telemetry";
import { REPLY_HEADER_KEYS, REPLY_HEADER_NAMES, REQUEST_ID_HEADER, decodeJson, encodeJson, encodeOkReply, headerSafe } from "./json.js";

/** The operation every served catalog also answers, with nothing: the gateway's readiness ping. */
export const PING_OP = "_ping";

export interface HandlerMeta {
  log: Logger;
  /**
   * Headers of the reply when it is a success, set by the handler (an answer's ETag): a caller
   * that relays the data reads them without parsing it (RawJson.headers).
   */
  headers: ReplyHeaders;
}

export type Handlers<C extends RpcCatalog> = {
  [K in OpName<C>]: (input: OpParsedInput<C, K>, ctx: RpcContext, meta: HandlerMeta) => Promise<OpOutput<C, K> | RawJson<OpOutput<C, K>>>;
};

export interface ServeOptions {
  namespace: string;
  log: Logger;
  /**
   * Turns an unexpected error into the AppError it really is, when the service knows better
   * than "internal" (database errors that are not bugs: `databaseErrorAsAppError` of libs/db).
   */
  classify?: (e: unknown) => AppError | undefined;
}

export interface Served {
  /** Stops taking new requests and lets the ones in flight finish. */
  drain(): Promise<void>;
}

/**
 * Subscribes every operation of a catalog on `<ns>.svc.<service>.<op>` in the queue group named
 * after the service, so replicas share the load. The handler map is complete at compile time.
 * Handlers are awaited here (the nats.js service API only catches synchronous throws), and every
 * failure becomes an `{ok:false}` reply: a bad message never crashes a service.
 */
export function serve<C extends RpcCatalog>(nc: NatsConnection, catalog: C, handlers: Handlers<C>, opts: ServeOptions): Served {
  const subs: Subscription[] = [];
  const inFlight = new Set<Promise<void>>();
  const debug = opts.log.isLevelEnabled("debug");
  const service = catalog.service;
  const gauge = rpcServerInFlight.labels({ service });
  const series = seriesCache(rpcServerDuration);
  // Answered by any replica of the queue group at once: "is some replica of this service serving?"
  subs.push(
    nc.subscribe(rpcSubject(opts.namespace, service, PING_OP), {
      queue: service,
      callback: (_err, msg) => void msg.respond(encodeOkReply(null)),
    }),
  );
  for (const op of Object.keys(catalog.ops) as OpName<C>[]) {
    const def = catalog.ops[op];
    const handler = handlers[op];
    if (!def || !handler) throw new Error(`serve(${catalog.service}): no handler for ${op}`);
    const sub = nc.subscribe(rpcSubject(opts.namespace, catalog.service, op), {
      queue: catalog.service,
      callback: (err, msg) => {
        if (err) {
          opts.log.error({ err, op }, "subscription error");
          return;
        }
        gauge.inc();
        const started = performance.now();
        const run = tracingEnabled()
          ? inSpan(
              `${service}/${op}`,
              { kind: SpanKind.SERVER, parent: extractContext(msg.headers), attributes: { "rpc.system": "nats", "rpc.service": service, "rpc.method": op } },
              async (span) => {
                const code = await handle(msg, started);
                if (code !== "ok") span.setAttributes({ "error.type": code });
                if (code === "internal_error") span.setStatus({ code: SpanStatusCode.ERROR });
              },
            )
          : handle(msg, started);
        // handle() answers every failure itself; this rejection handler is the last line, so that
        // nothing a message carries can become an unhandled rejection (which would end the process).
        const p: Promise<void> = run
          .then(
            () => undefined,
            (e: unknown) => opts.log.error({ err: e, op }, "could not answer a request"),
          )
          .finally(() => {
            gauge.dec();
            inFlight.delete(p);
          });
        inFlight.add(p);
      },
    });
    subs.push(sub);

    /** Answers one request; resolves to its outcome code ("ok" or the error's code) once sent. */
    const handle = async (msg: Msg, started: number): Promise<string> => {
      const requestId = msg.headers?.get(REQUEST_ID_HEADER) || "unknown";
      // The per-message child logger (request_id, organization_id on every line) is built on
      // first use: most messages log nothing, and a pino child per message is measurable CPU.
      let organizationId: string | null = null;
      let child: Logger | undefined;
      const bindings = () => ({ request_id: requestId, op: `${catalog.service}.${op}`, ...(organizationId ? { organization_id: organizationId } : {}) });
      const meta: HandlerMeta = {
        get log() {
          return (child ??= opts.log.child(bindings()));
        },
        headers: {},
      };
      let reply: RpcReply;
      try {
        const envelope = RpcRequest.safeParse(decodeJson(msg.data));
        if (!envelope.success) throw validationError(envelope.error, "", "The RPC envelope");
        const ctx = envelope.data.ctx;
        organizationId = ctx.organization_id;
        // Nobody waits for the answer any more (the request sat in a backlog): starting it would
        // only take a connection from requests whose callers still wait.
        if (ctx.deadline_at !== undefined && Date.now() >= ctx.deadline_at) {
          rpcDeadlineExpired.labels({ service, operation: op }).inc();
          throw new AppError("service_unavailable", `The ${service} service received the request after its caller stopped waiting; retry shortly.`, {
            retryAfter: 1,
          });
        }
        const input = def.input.safeParse(envelope.data.input);
        if (!input.success) throw validationError(input.error);
        // The output contract is checked once, by the caller's client (the trust boundary);
        // handlers are typed against it at compile time.
        const data: unknown = await handler(input.data as OpParsedInput<C, typeof op>, ctx, meta);
        reply = { ok: true, data };
      } catch (e) {
        if (isAppError(e)) {
          // A 503 is load or an outage, expected and retried: not a bug to page anyone about.
          if (e.code === "service_unavailable") meta.log.warn({ err: e.cause ?? e }, e.message);
          else if (e.status >= 500) meta.log.error({ err: e.cause ?? e }, e.message);
          reply = { ok: false, error: e.toRpc() };
        } else {
          const known = opts.classify?.(e);
          if (known?.status === 400) meta.log.warn({ err: e }, "input refused by the database, not by its contract: a validation gap");
          else if (known) meta.log.warn({ err: e }, known.message);
          else meta.log.error({ err: e }, "unexpected error");
          reply = { ok: false, error: (known ?? new AppError("internal_error", "An unexpected error occurred.")).toRpc() };
        }
      }
      if (debug) meta.log.debug({ ok: reply.ok, ms: Math.round(performance.now() - started) }, "rpc handled");
      const h = natsHeaders();
      h.set(REQUEST_ID_HEADER, headerSafe(requestId));
      if (!reply.ok) {
        // Same convention as the nats.js service framework, so generic NATS tooling sees failures.
        // The detail may quote caller input: headerSafe() keeps it a valid header value.
        h.set("Nats-Service-Error", headerSafe(reply.error.detail));
        h.set("Nats-Service-Error-Code", String(reply.error.status));
      } else {
        for (const k of REPLY_HEADER_KEYS) {
          const v = meta.headers[k];
          if (v !== undefined) h.set(REPLY_HEADER_NAMES[k], headerSafe(v));
        }
      }
      let body: Uint8Array;
      try {
        // Successes in the one framing a relaying client slices without parsing (okReplyData).
        body = reply.ok ? encodeOkReply(reply.data) : encodeJson(reply);
      } catch (e) {
        // A handler returned something JSON cannot carry (a BigInt, a cycle): a bug, answered as one.
        meta.log.error({ err: e }, "reply could not be encoded");
        body = encodeJson({ ok: false, error: new AppError("internal_error", "An unexpected error occurred.").toRpc() });
      }
      // Past the server's max_payload msg.respond throws and the caller times out (a 503 it retries,
      // the same work again, forever): answered instead as the bug it is, in a reply that fits.
      const maxPayload = nc.info?.max_payload;
      if (maxPayload !== undefined && body.byteLength + headerBytes(h) > maxPayload) {
        meta.log.error({ bytes: body.byteLength, max_payload: maxPayload }, "reply larger than the NATS max_payload: answered 500 instead");
        rpcReplyTooLarge.labels({ service, operation: op }).inc();
        const detail = `The answer (${body.byteLength} bytes) is larger than one message between our services may carry (${maxPayload} bytes): ask for less at once, such as fewer items.`;
        reply = { ok: false, error: new AppError("internal_error", detail).toRpc() };
        for (const k of REPLY_HEADER_KEYS) h.delete(REPLY_HEADER_NAMES[k]);
        h.set("Nats-Service-Error", headerSafe(detail));
        h.set("Nats-Service-Error-Code", String(reply.error.status));
        body = encodeJson(reply);
      }
      if (!msg.respond(body, { headers: h })) meta.log.warn("request had no reply subject; nothing sent");
      const code = reply.ok ? "ok" : reply.error.code;
      series(`${op} ${code}`, { service, operation: op, code }).observe((performance.now() - started) / 1000);
      return code;
    };
  }
  return {
    async drain() {
      await Promise.all(subs.map((s) => s.drain()));
      await Promise.allSettled([...inFlight]);
    },
  };
}

/** A header block's bytes as NATS counts them against max_payload: `NATS/1.0\r\n`, `key: value\r\n` each, `\r\n`. */
function headerBytes(h: MsgHdrs): number {
  let n = 12;
  for (const [k, values] of h) for (const v of values) n += Buffer.byteLength(k) + Buffer.byteLength(v) + 4;
  return n;
}
