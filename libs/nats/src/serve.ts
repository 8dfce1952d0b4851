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
  countRpcInFlight,
  seriesCache,
  SpanKind,
  SpanStatusCode,
  tracingEnabled,
} from "@tasksvc/telemetry";
import { REPLY_HEADER_KEYS, REPLY_HEADER_NAMES, REQUEST_ID_HEADER, decodeJson, encodeJson, encodeOkReply, headerSafe } from "./json.js";

/** Answered by every served catalog: the gateway's readiness ping. */
export const PING_OP = "_ping";

export interface HandlerMeta {
  log: Logger;
  /** Set by the handler (an answer's ETag), so a relaying caller reads them without parsing the data. */
  headers: ReplyHeaders;
}

export type Handlers<C extends RpcCatalog> = {
  [K in OpName<C>]: (input: OpParsedInput<C, K>, ctx: RpcContext, meta: HandlerMeta) => Promise<OpOutput<C, K> | RawJson<OpOutput<C, K>>>;
};

export interface ServeOptions {
  namespace: string;
  log: Logger;
  /** The AppError an unexpected error really is, when the service knows better than "internal". */
  classify?: (e: unknown) => AppError | undefined;
}

export interface Served {
  drain(): Promise<void>;
}

/**
 * Handlers are awaited here (the nats.js service API only catches synchronous throws), and every
 * failure becomes an `{ok:false}` reply: a bad message never crashes a service.
 */
export function serve<C extends RpcCatalog>(nc: NatsConnection, catalog: C, handlers: Handlers<C>, opts: ServeOptions): Served {
  const subs: Subscription[] = [];
  const inFlight = new Set<Promise<void>>();
  const debug = opts.log.isLevelEnabled("debug");
  const service = catalog.service;
  const uncount = countRpcInFlight(service, () => inFlight.size);
  const series = seriesCache(rpcServerDuration);
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
        // The last line, so nothing a message carries can become an unhandled rejection (which ends the process).
        const p: Promise<void> = run
          .then(
            () => undefined,
            (e: unknown) => opts.log.error({ err: e, op }, "could not answer a request"),
          )
          .finally(() => inFlight.delete(p));
        inFlight.add(p);
      },
    });
    subs.push(sub);

    const handle = async (msg: Msg, started: number): Promise<string> => {
      const requestId = msg.headers?.get(REQUEST_ID_HEADER) || "unknown";
      // Built on first use: most messages log nothing, and a pino child per message is measurable CPU.
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
        // Nobody waits for the answer any more: starting it would only take a connection from callers who still wait.
        if (ctx.deadline_at !== undefined && Date.now() >= ctx.deadline_at) {
          rpcDeadlineExpired.labels({ service, operation: op }).inc();
          throw new AppError("service_unavailable", `The ${service} service received the request after its caller stopped waiting; retry shortly.`, {
            retryAfter: 1,
          });
        }
        const input = def.input.safeParse(envelope.data.input);
        if (!input.success) throw validationError(input.error);
        // The output contract is checked once, by the caller's client (the trust boundary).
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
        // The nats.js service framework's convention, so generic NATS tooling sees failures.
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
        // The one framing a relaying client slices without parsing.
        body = reply.ok ? encodeOkReply(reply.data) : encodeJson(reply);
      } catch (e) {
        meta.log.error({ err: e }, "reply could not be encoded");
        body = encodeJson({ ok: false, error: new AppError("internal_error", "An unexpected error occurred.").toRpc() });
      }
      // Past max_payload msg.respond throws and the caller times out, retrying the same work for ever: answered instead as the bug it is, in a reply that fits.
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
      uncount();
    },
  };
}

/** As NATS counts them against max_payload. */
function headerBytes(h: MsgHdrs): number {
  let n = 12;
  for (const [k, values] of h) for (const v of values) n += Buffer.byteLength(k) + Buffer.byteLength(v) + 4;
  return n;
}
