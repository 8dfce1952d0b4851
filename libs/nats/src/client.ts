import { type Msg, headers as natsHeaders, type NatsConnection } from "@nats-io/transport-node";
import {
  RawJson,
  type ReplyHeaders,
  RpcReply,
  rpcSubject,
  type RpcOp,
  type OpInput,
  type OpName,
  type OpOutput,
  type RpcCatalog,
  type RpcContext,
} from "@tasksvc/contracts";
import { AppError } from "@tasksvc/errors";
import { injectContext, inSpan, rpcClientDuration, SpanKind, seriesCache, tracingEnabled } from "@tasksvc/telemetry";
import { isDeepStrictEqual } from "node:util";
import { REPLY_HEADER_KEYS, REPLY_HEADER_NAMES, REQUEST_ID_HEADER, decodeJson, encodeJson, okReplyData } from "./json.js";
import { PING_OP } from "./serve.js";

export interface ClientOptions {
  namespace: string;
  timeoutMs: number;
  /** Checks each relayed reply against its schema, and that the check changed nothing: on in tests, off in production. */
  checkReplies?: boolean;
}

export interface RpcClient<C extends RpcCatalog> {
  /** Parsed and checked against the output schema, for a caller that reads it. */
  call<K extends OpName<C>>(op: K, input: OpInput<C, K>, ctx: RpcContext): Promise<OpOutput<C, K>>;
  /** The output as the service encoded it, for a caller that only passes it on; failures throw as call() does. */
  relay<K extends OpName<C>>(op: K, input: OpInput<C, K>, ctx: RpcContext): Promise<RawJson<OpOutput<C, K>>>;
}

const RETRY_AFTER_SECONDS = 1;

/** `{ok:false}` becomes the same AppError the service threw; silence becomes a 503. */
export function client<C extends RpcCatalog>(nc: NatsConnection, catalog: C, opts: ClientOptions): RpcClient<C> {
  const service = catalog.service;
  const series = seriesCache(rpcClientDuration);
  const timed = async <T>(op: OpName<C>, input: unknown, ctx: RpcContext, read: (op: string, def: RpcOp, reply: Msg) => T): Promise<T> => {
    const started = performance.now();
    let code = "ok";
    try {
      const def = catalog.ops[op];
      if (!def) throw new Error(`${catalog.service} has no operation ${op}`);
      return read(op, def, await send(op, def, input, ctx));
    } catch (e) {
      code = e instanceof AppError ? e.code : "internal_error";
      throw e;
    } finally {
      series(`${op} ${code}`, { service, operation: op, code }).observe((performance.now() - started) / 1000);
    }
  };
  const send = async (op: string, def: RpcOp, input: unknown, ctx: RpcContext): Promise<Msg> => {
    const h = natsHeaders();
    h.set(REQUEST_ID_HEADER, ctx.request_id);
    injectContext(h);
    const timeout = Math.max(opts.timeoutMs, def.timeoutMs ?? 0);
    // The service starts nothing after this and cancels its statements at it; a call made on behalf of another keeps the earlier of the two.
    const deadline = Date.now() + timeout;
    const deadline_at = ctx.deadline_at === undefined ? deadline : Math.min(ctx.deadline_at, deadline);
    try {
      return await nc.request(rpcSubject(opts.namespace, catalog.service, op), encodeJson({ ctx: { ...ctx, deadline_at }, input }), {
        timeout,
        headers: h,
      });
    } catch (e) {
      throw new AppError("service_unavailable", `The ${catalog.service} service did not answer in time; retry shortly.`, {
        cause: e,
        retryAfter: RETRY_AFTER_SECONDS,
      });
    }
  };
  /** A service broke its own contract: a bug on our side, never the caller's. */
  const outsideContract = (op: string, cause: unknown) =>
    new AppError("internal_error", `The ${catalog.service} service answered ${op} outside its contract.`, { cause });
  const parsed = (op: string, def: RpcOp, msg: Msg): unknown => {
    const reply = RpcReply.parse(decodeJson(msg.data));
    if (!reply.ok) throw AppError.fromRpc(reply.error);
    const out = def.output.safeParse(reply.data);
    if (!out.success) throw outsideContract(op, out.error);
    return out.data;
  };
  const relayed = (op: string, def: RpcOp, msg: Msg): RawJson => {
    const bytes = okReplyData(msg.data);
    // Anything but a success is read in full: an error, or a framing we do not slice.
    if (!bytes) return new RawJson(Buffer.from(JSON.stringify(parsed(op, def, msg))), replyHeaders(msg));
    const raw = new RawJson(bytes, replyHeaders(msg));
    if (opts.checkReplies) {
      const value = raw.parse();
      const out = def.output.safeParse(value);
      if (!out.success) throw outsideContract(op, out.error);
      // Relayed bytes skip the schema, so the schema must have nothing to change in them.
      if (!isDeepStrictEqual(out.data, value))
        throw outsideContract(op, new Error("the output schema changes this reply (a stripped field or an added default)"));
    }
    return raw;
  };
  const traced = <T>(op: string, run: () => Promise<T>): Promise<T> =>
    tracingEnabled()
      ? inSpan(`${service}/${op}`, { kind: SpanKind.CLIENT, attributes: { "rpc.system": "nats", "rpc.service": service, "rpc.method": op } }, run)
      : run();
  return {
    call: (op, input, ctx) => traced(op, () => timed(op, input, ctx, parsed) as Promise<OpOutput<C, typeof op>>),
    relay: (op, input, ctx) => traced(op, () => timed(op, input, ctx, relayed) as Promise<RawJson<OpOutput<C, typeof op>>>),
  };
}

function replyHeaders(msg: Msg): ReplyHeaders {
  const out: ReplyHeaders = {};
  if (!msg.headers) return out;
  for (const k of REPLY_HEADER_KEYS) {
    const v = msg.headers.get(REPLY_HEADER_NAMES[k]);
    if (v !== "") out[k] = v;
  }
  return out;
}

/** Every served catalog answers its ping subject with nothing. */
export async function ping(nc: NatsConnection, namespace: string, service: string, timeoutMs: number): Promise<boolean> {
  try {
    await nc.request(rpcSubject(namespace, service, PING_OP), undefined, { timeout: timeoutMs });
    return true;
  } catch {
    return false;
  }
}
