import { callerOf, type keysRpc } from "@tasksvc/contracts";
import type { Handlers } from "@tasksvc/nats";
import type { KeysService } from "./domain/keys-service.js";

export function keysHandlers(svc: KeysService): Handlers<typeof keysRpc> {
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
    acceptInvitation: (i) => svc.acceptInvitation(i),
    createApiKey: (i, ctx) => svc.createApiKey(callerOf(ctx), i),
    listApiKeys: (i, ctx) => svc.listApiKeys(callerOf(ctx), i.limit, i.after),
    revokeApiKey: (i, ctx) => svc.revokeApiKey(callerOf(ctx), i.key_id),
    bootstrap: (i) => svc.bootstrap(i),
    addUser: (i) => svc.addUser(i),
    setRole: (i) => svc.setRole(i),
    removeMember: (i) => svc.removeMember(i),
    setPlan: (i) => svc.setPlan(i),
    setLimits: (i) => svc.setLimits(i),
    legacyKey: (i) => svc.legacyKey(i),
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
