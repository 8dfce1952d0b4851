import type { RpcContext } from "./rpc.js";

/**
 * The caller of a public operation, as the gateway resolved it from the credential; every such
 * operation is scoped to its organization. Administrative operations (the admin CLI) have none.
 */
export interface Caller {
  organizationId: string;
  userId: string;
  /** The API key or access token: service idempotency records are scoped to it. */
  credentialId: string;
  /** The request's Idempotency-Key, when it sent one. */
  idempotencyKey: string | undefined;
  /** The request's If-Match entity tags, where the operation honours it. */
  ifMatch?: string[] | undefined;
  /** The request's If-None-Match entity tags, where the operation honours If-Match. */
  ifNoneMatch?: string[] | undefined;
  /** When the caller stops waiting (Unix milliseconds), if it said so. */
  deadline?: number | undefined;
  /** The context as received, for calls to another service on the caller's behalf. */
  ctx: RpcContext;
}

/**
 * The entry layer's first step for a public operation (each service's rpc.ts). The gateway sets
 * organization, user and credential together on every authenticated request, so a context
 * without them is a bug upstream: an unexpected error (a 500 logged with its stack), not an
 * AppError, since this package sits below libs/errors.
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

/**
 * A context with no caller: the trust of NATS itself (the admin CLI, the delivery worker, the
 * gateway's link routes, whose capability is the whole authorization; an unauthenticated request
 * before its credential is resolved).
 */
export function systemContext(requestId: string): RpcContext {
  return { request_id: requestId, organization_id: null, user_id: null, credential_id: null, scopes: [], plan: null };
}
