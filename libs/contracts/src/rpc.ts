import { z } from "zod";
import { ERROR_CODES, type ErrorCode } from "./codes.js";
import { FieldError, IdempotencyKey } from "./common.js";
import { Plan, Scope } from "./auth.js";
import { Actor } from "./actor.js";

/** Administrative calls (the admin CLI) carry no organization: they run with the trust of NATS itself. */
export const RpcContext = z.object({
  request_id: z.string().min(1),
  organization_id: z.string().nullable(),
  user_id: z.string().nullable(),
  credential_id: z.string().nullable(),
  scopes: z.array(Scope),
  plan: Plan.nullable(),
  idempotency_key: IdempotencyKey.optional(),
  /** `*`, or each tag as sent, quotes included. */
  if_match: z.array(z.string()).optional(),
  if_none_match: z.array(z.string()).optional(),
  /** Who acts: set by the gateway from the credential; derived from `credential_id` when absent (an older gateway, the admin CLI). */
  actor: Actor.optional(),
  /** The HTTP client's address and User-Agent, for the audit log. */
  ip: z.string().max(64).optional(),
  user_agent: z.string().max(512).optional(),
  /** Unix ms, set by the RPC client from its timeout: a request received later is not started. */
  deadline_at: z.number().int().optional(),
  /** The organization's scans at once per replica, when an operator set them; absent: the service's fair share. */
  scan_share: z.number().int().positive().optional(),
});
export type RpcContext = z.infer<typeof RpcContext>;

export const RpcRequest = z.object({ ctx: RpcContext, input: z.unknown() });

export const RpcError = z.object({
  status: z.number().int(),
  code: z.enum(ERROR_CODES as [ErrorCode, ...ErrorCode[]]),
  detail: z.string(),
  errors: z.array(FieldError).optional(),
  /** Sent with a 412. */
  etag: z.string().optional(),
  retry_after: z.number().int().min(0).optional(),
});
export type RpcError = z.infer<typeof RpcError>;

export const RpcReply = z.discriminatedUnion("ok", [z.object({ ok: z.literal(true), data: z.unknown() }), z.object({ ok: z.literal(false), error: RpcError })]);
export type RpcReply = z.infer<typeof RpcReply>;

const textDecoder = new TextDecoder();

/** Carried in the reply's headers, never inside the data, so a caller passing the data on need not parse it. */
export interface ReplyHeaders {
  etag?: string;
}

/** JSON bytes encoded once and passed on without being parsed or stringified again (decision 0020). */
export class RawJson<T = unknown> {
  declare readonly encodes?: T;
  constructor(
    readonly bytes: Uint8Array,
    readonly headers: ReplyHeaders = {},
  ) {}
  parse(): T {
    return JSON.parse(textDecoder.decode(this.bytes)) as T;
  }
}

export interface RpcOp {
  input: z.ZodType;
  output: z.ZodType;
  /** For an operation that makes an outbound call. */
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

export function rpcSubject(namespace: string, service: string, op: string): string {
  return `${namespace}.svc.${service}.${op}`;
}
