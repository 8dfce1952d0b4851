import { callerOf, type keysRpc } from "@tasksvc/contracts";
import type { Handlers } from "@tasksvc/nats";
import type { AuditSystem } from "./domain/audit.js";
import type { KeysService } from "./domain/keys-service.js";

export function keysHandlers(svc: KeysService, audit: AuditSystem): Handlers<typeof keysRpc> {
  return {
    authenticateKey: (i) => svc.authenticateKey(i.key_hash),
    resolveMember: (i) => svc.resolveMember(i),
    devJwks: () => svc.devJwks(),
    currentMembers: (i) => svc.currentMembers(i.organization_id, i.user_ids),
    userEmails: (i) => svc.userEmails(i.user_ids),
    membersByEmail: (i) => svc.membersByEmail(i.organization_id, i.emails),
    listOrganizations: (_i, ctx) => svc.listOrganizations(callerOf(ctx)),
    getOrganization: (i, ctx) => svc.getOrganization(callerOf(ctx), i.organization_id),
    listMembers: (i, ctx) => svc.listMembers(callerOf(ctx), i.limit, i.after),
    getMember: (i, ctx) => svc.getMember(callerOf(ctx), i.user_id),
    updateMember: (i, ctx) => svc.updateMember(callerOf(ctx), i.user_id, i.role),
    deleteMember: (i, ctx) => svc.deleteMember(callerOf(ctx), i.user_id),
    createInvitation: (i, ctx) => svc.createInvitation(callerOf(ctx), i),
    listInvitations: (i, ctx) => svc.listInvitations(callerOf(ctx), i.limit, i.after),
    revokeInvitation: (i, ctx) => svc.revokeInvitation(callerOf(ctx), i.invitation_id),
    acceptInvitation: (i, ctx) => svc.acceptInvitation(i, ctx),
    createApiKey: (i, ctx) => svc.createApiKey(callerOf(ctx), i),
    listApiKeys: (i, ctx) => svc.listApiKeys(callerOf(ctx), i.limit, i.after),
    revokeApiKey: (i, ctx) => svc.revokeApiKey(callerOf(ctx), i.key_id),
    listAuditEvents: (i, ctx) => audit.list(callerOf(ctx), i),
    bootstrap: (i, ctx) => svc.bootstrap(i, ctx),
    addUser: (i, ctx) => svc.addUser(i, ctx),
    setRole: (i, ctx) => svc.setRole(i, ctx),
    removeMember: (i, ctx) => svc.removeMember(i, ctx),
    setPlan: (i, ctx) => svc.setPlan(i, ctx),
    setLimits: (i, ctx) => svc.setLimits(i, ctx),
    legacyKey: (i, ctx) => svc.legacyKey(i, ctx),
    issueToken: (i) => svc.issueToken(i),
    createOAuthClient: (i, ctx) => svc.createOAuthClient(callerOf(ctx), i),
    listOAuthClients: (i, ctx) => svc.listOAuthClients(callerOf(ctx), i.limit, i.after),
    getOAuthClient: (i, ctx) => svc.getOAuthClient(callerOf(ctx), i.oauth_client_id),
    deleteOAuthClient: (i, ctx) => svc.deleteOAuthClient(callerOf(ctx), i.oauth_client_id),
    authenticateClient: (i) => svc.authenticateClient(i.client_id, i.secret_hash),
    resolveClientToken: (i) => svc.resolveClientToken(i),
    revokeClientToken: (i) => svc.revokeClientToken(i),
  };
}
