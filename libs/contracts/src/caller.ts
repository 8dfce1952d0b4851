import { ADMIN_CLI_CREDENTIAL, type Actor, SYSTEM_ACTOR } from "./actor.js";
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
  /** Which credential acts, as task versions and audit events record it. */
  actor: Actor;
  /** For calls to another service on the caller's behalf. */
  ctx: RpcContext;
}

/** The gateway names the actor; a context without one (the admin CLI, a worker, an older gateway) is derived from its credential. */
export function actorOf(ctx: RpcContext): Actor {
  if (ctx.actor) return ctx.actor;
  if (!ctx.credential_id) return SYSTEM_ACTOR;
  if (ctx.credential_id === ADMIN_CLI_CREDENTIAL) return { type: "system", id: ADMIN_CLI_CREDENTIAL, user_id: null };
  if (ctx.credential_id.startsWith("key_")) return { type: "api_key", id: ctx.credential_id, user_id: ctx.user_id };
  if (ctx.credential_id.startsWith("oac_")) return { type: "oauth_client", id: ctx.credential_id, user_id: ctx.user_id };
  return { type: "user", id: ctx.user_id ?? ctx.credential_id, user_id: ctx.user_id };
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
    actor: actorOf(ctx),
    ctx,
  };
}

/** The trust of NATS itself: the admin CLI, workers, and the link routes, whose capability is the whole authorization. */
export function systemContext(requestId: string): RpcContext {
  return { request_id: requestId, organization_id: null, user_id: null, credential_id: null, scopes: [], plan: null };
}
