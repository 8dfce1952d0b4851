import { z } from "zod";
import { ERROR_CODES, type ErrorCode } from "./codes.js";
import { FieldError, IdempotencyKey } from "./common.js";
import { Plan, Scope } from "./auth.js";

/**
 * DESIGN.md section 1: every request/reply message is `{ ctx, input }`.
 * Administrative calls (the admin CLI) carry no organization: they run with the trust of NATS itself.
 */
export const RpcContext = z.object({
  request_id: z.string().min(1),
  organization_id: z.string().nullable(),
  user_id: z.string().nullable(),
  credential_id: z.string().nullable(),
  scopes: z.array(Scope),
  plan: Plan.nullable(),
  idempotency_key: IdempotencyKey.optional(),
  /** The entity tags of the request's If-Match (`*`, or each tag as sent, quotes included), where the operation honours it. */
  if_match: z.array(z.string()).optional(),
  /** The entity tags of the request's If-None-Match, where the operation honours If-Match (a write): a match refuses it. */
  if_none_match: z.array(z.string()).optional(),
  /**
   * When the caller stops waiting (Unix milliseconds; set by the RPC client from its timeout): a
   * request received later is not started, and its statements are cancelled when it passes.
   */
  deadline_at: z.number().int().optional(),
});
export type RpcContext = z.infer<typeof RpcContext>;

export const RpcRequest = z.object({ ctx: RpcContext, input: z.unknown() });

export const RpcError = z.object({
  status: z.number().int(),
  code: z.enum(ERROR_CODES as [ErrorCode, ...ErrorCode[]]),
  detail: z.string(),
  errors: z.array(FieldError).optional(),
  /** The resource's current ETag, sent with a 412 (precondition_failed). */
  etag: z.string().optional(),
  /** Seconds the caller should wait before retrying (a 429 or 503): the answer's Retry-After. */
  retry_after: z.number().int().min(0).optional(),
});
export type RpcError = z.infer<typeof RpcError>;

export const RpcReply = z.discriminatedUnion("ok", [z.object({ ok: z.literal(true), data: z.unknown() }), z.object({ ok: z.literal(false), error: RpcError })]);
export type RpcReply = z.infer<typeof RpcReply>;

const textDecoder = new TextDecoder();

/**
 * What a success reply says about its data, carried in the reply's headers and never inside the
 * data, so that a caller passing the data on reads it without parsing: `etag`, the ETag of an
 * answer that is one resource (a task), which the gateway sends as its ETag header.
 */
export interface ReplyHeaders {
  etag?: string;
}

/**
 * An operation's output as JSON bytes encoded once (by Postgres, or as a service's reply arrived)
 * and passed on without being parsed or stringified again (decision 0020). `T` is the value the
 * bytes encode, for the types only: a handler may answer `RawJson<its output>`. `headers`: what
 * the reply said about the bytes (a relayed reply's).
 */
export class RawJson<T = unknown> {
  declare readonly encodes?: T;
  constructor(
    readonly bytes: Uint8Array,
    readonly headers: ReplyHeaders = {},
  ) {}
  /** The value the bytes encode (tests, and a caller that must look inside). */
  parse(): T {
    return JSON.parse(textDecoder.decode(this.bytes)) as T;
  }
}

export interface RpcOp {
  input: z.ZodType;
  output: z.ZodType;
  /** How long a caller waits for this operation, over the client's default (one that makes an outbound call). */
  timeoutMs?: number;
}
export interface RpcCatalog {
  service: string;
  ops: Record<string, RpcOp>;
}
export type OpName<C extends RpcCatalog> = keyof C["ops"] & string;
export type OpInput<C extends RpcCatalog, K extends OpName<C>> = z.input<C["ops"][K]["input"]>;
export type OpParsedInput<C extends RpcCatalog, K extends OpName<C>> = z.output<C["ops"][K]["input"]>;
export type OpOutput<C extends RpcCatalog, K extends OpName<C>> = z.output<C["ops"][K]["output"]>;

/** Request/reply subject of one operation: `<namespace>.svc.<service>.<operation>`. */
export function rpcSubject(namespace: string, service: string, op: string): string {
  return `${namespace}.svc.${service}.${op}`;
}
