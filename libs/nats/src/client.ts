import { headers as natsHeaders, type Msg, type NatsConnection } from "@nats-io/transport-node";
import { RpcReply, rpcSubject, type OpInput, type OpName, type OpOutput, type RpcCatalog, type RpcContext } from "@tasksvc/contracts";
import { AppError } from "@tasksvc/errors";
import { REQUEST_ID_HEADER, decodeJson, encodeJson } from "./json.js";

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
  return {
    async call(op, input, ctx) {
      const def = catalog.ops[op];
      if (!def) throw new Error(`${catalog.service} has no operation ${op}`);
      const h = natsHeaders();
      h.set(REQUEST_ID_HEADER, ctx.request_id);
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
    },
  };
}
