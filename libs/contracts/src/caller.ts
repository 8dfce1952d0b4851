import type { RpcContext } from "./rpc.js";

export interface Caller {
  organizationId: string;
  userId: string;
  /** Service idempotency records are scoped to it. */
  credentialId: string;
  idempotencyKey: string | undefined;
  ifMatch?: string[] | undefined;
  ifNoneMatch?: string[] | undefined;
  /** Unix milliseconds. */
  deadline?: number | undefined;
  /** For calls to another service on the caller's behalf. */
  ctx: RpcContext;
}

/**
 * The gateway sets organization, user and credential together, so a context without them is a bug
 * upstream: an unexpected error (a 500 with its stack), not an AppError.
 */
export function callerOf(ctx: RpcContext): Caller {
  if (!ctx.organization_id || !ctx.user_id || !ctx.credential_id) throw new Error("RPC context carries no organization, user or credential.");
  return {
    organizationId: ctx.organization_id,
    userId: ctx.user_id,
    credentialId: ctx.credential_id,
    idempotencyKey: ctx.idempotency_key,
    ifMatch: ctx.if_match,
    ifNoneMatch: ctx.if_none_match,
    deadline: ctx.deadline_at,
    ctx,
  };
}

/** The trust of NATS itself: the admin CLI, workers, and the link routes, whose capability is the whole authorization. */
export function systemContext(requestId: string): RpcContext {
  return { request_id: requestId, organization_id: null, user_id: null, credential_id: null, scopes: [], plan: null };
}
