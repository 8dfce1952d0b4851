import { headers as natsHeaders, type Msg, type NatsConnection } from "@nats-io/transport-node";
import { RpcReply, rpcSubject, type OpInput, type OpName, type OpOutput, type RpcCatalog, type RpcContext } from "@tasksvc/contracts";
import { AppError } from "@tasksvc/errors";
import { injectContext, inSpan, rpcClientDuration, SpanKind, seriesCache, tracingEnabled } from "@tasksvc/telemetry";
import { REQUEST_ID_HEADER, decodeJson, encodeJson } from "./json.js";
import { PING_OP } from "./serve.js";

export interface ClientOptions {
  namespace: string;
  timeoutMs: number;
}

export interface RpcClient<C extends RpcCatalog> {
  call<K extends OpName<C>>(op: K, input: OpInput<C, K>, ctx: RpcContext): Promise<OpOutput<C, K>>;
}

/** Seconds a client should wait before retrying a call that found no service or timed out. */
const RETRY_AFTER_SECONDS = 1;

/**
 * Typed request/reply client of one catalog. Replies are parsed against the output schema;
 * `{ok:false}` becomes the same AppError the service threw; silence becomes a 503.
 */
export function client<C extends RpcCatalog>(nc: NatsConnection, catalog: C, opts: ClientOptions): RpcClient<C> {
  const service = catalog.service;
  const series = seriesCache(rpcClientDuration);
  const call: RpcClient<C>["call"] = async (op, input, ctx) => {
    const started = performance.now();
    let code = "ok";
    try {
      return await send(op, input, ctx);
    } catch (e) {
      code = e instanceof AppError ? e.code : "internal_error";
      throw e;
    } finally {
      series(`${op} ${code}`, { service, operation: op, code }).observe((performance.now() - started) / 1000);
    }
  };
  const send: RpcClient<C>["call"] = async (op, input, ctx) => {
    const def = catalog.ops[op];
    if (!def) throw new Error(`${catalog.service} has no operation ${op}`);
    const h = natsHeaders();
    h.set(REQUEST_ID_HEADER, ctx.request_id);
    injectContext(h);
    let raw: Msg;
    try {
      raw = await nc.request(rpcSubject(opts.namespace, catalog.service, op), encodeJson({ ctx, input }), {
        timeout: Math.max(opts.timeoutMs, def.timeoutMs ?? 0),
        headers: h,
      });
    } catch (e) {
      throw new AppError("service_unavailable", `The ${catalog.service} service did not answer in time; retry shortly.`, {
        cause: e,
        retryAfter: RETRY_AFTER_SECONDS,
      });
    }
    const reply = RpcReply.parse(decodeJson(raw.data));
    if (!reply.ok) throw AppError.fromRpc(reply.error);
    const out = def.output.safeParse(reply.data);
    if (!out.success) {
      // A service broke its own contract: a bug on our side, never the caller's.
      throw new AppError("internal_error", `The ${catalog.service} service answered ${op} outside its contract.`, { cause: out.error });
    }
    return out.data as OpOutput<C, typeof op>;
  };
  return {
    call: (op, input, ctx) =>
      tracingEnabled()
        ? inSpan(`${service}/${op}`, { kind: SpanKind.CLIENT, attributes: { "rpc.system": "nats", "rpc.service": service, "rpc.method": op } }, () =>
            call(op, input, ctx),
          )
        : call(op, input, ctx),
  };
}

/**
 * Whether some replica of `service` answers within `timeoutMs` (the gateway's readiness): a
 * request on its ping subject, which every served catalog answers with nothing.
 */
export async function ping(nc: NatsConnection, namespace: string, service: string, timeoutMs: number): Promise<boolean> {
  try {
    await nc.request(rpcSubject(namespace, service, PING_OP), undefined, { timeout: timeoutMs });
    return true;
  } catch {
    return false;
  }
}
