import { keysRpc, type RpcContext } from "@tasksvc/contracts";
import { AppError } from "@tasksvc/errors";
import type { Handlers } from "@tasksvc/nats";
import type { KeysService, Tenant } from "./domain/keys-service.js";

/** Public operations need the tenant the gateway resolved; a message without one is a caller bug. */
function tenant(ctx: RpcContext): Tenant {
  if (!ctx.organization_id || !ctx.user_id) throw new AppError("internal_error", "RPC context carries no organization or user.");
  return { organizationId: ctx.organization_id, userId: ctx.user_id };
}

/** Entry layer: maps each RPC operation of the catalog onto the domain. */
export function keysHandlers(svc: KeysService): Handlers<typeof keysRpc> {
  return {
    authenticateKey: (i) => svc.authenticateKey(i.key_hash),
    resolveMember: (i) => svc.resolveMember(i),
    devJwks: () => svc.devJwks(),
    listOrganizations: (_i, ctx) => svc.listOrganizations(tenant(ctx)),
    getOrganization: (i, ctx) => svc.getOrganization(tenant(ctx), i.organization_id),
    listMembers: (i, ctx) => svc.listMembers(tenant(ctx), i.limit, i.after),
    createApiKey: (i, ctx) => svc.createApiKey({ ...tenant(ctx), credentialId: ctx.credential_id, idempotencyKey: ctx.idempotency_key }, i),
    listApiKeys: (i, ctx) => svc.listApiKeys(tenant(ctx), i.limit, i.after),
    revokeApiKey: (i, ctx) => svc.revokeApiKey(tenant(ctx), i.key_id),
    bootstrap: (i) => svc.bootstrap(i),
    addUser: (i) => svc.addUser(i),
    setRole: (i) => svc.setRole(i),
    setPlan: (i) => svc.setPlan(i),
    setLimits: (i) => svc.setLimits(i),
    legacyKey: (i) => svc.legacyKey(i),
    issueToken: (i) => svc.issueToken(i),
  };
}
