import { CreatedInvitation, CreateInvitationBody, Invitation, InvitationIdParams, PageQuery, page } from "@tasksvc/contracts";
import { resource } from "../pipeline/resource.js";

// Accepting takes no credential, so it is a route of the HTTP edge (with its own per-address
// limit), not an operation here.
export const invitations = resource({ name: "invitations", scopes: "members" }, (r) => {
  r.op(
    {
      method: "POST",
      url: "/v1/invitations",
      operationId: "createInvitation",
      summary: "Invite someone to join the organization (the token is shown once)",
      body: CreateInvitationBody,
      status: 201,
      location: "/v1/invitations/{id}",
      response: CreatedInvitation,
      idempotent: true,
      // Not kept in the gateway's record; a replay asks the keys service again.
      secretInResponse: true,
      errors: ["already_member", "limit_reached"],
    },
    ({ clients, body, ctx }) => clients.keys.relay("createInvitation", body, ctx),
  );
  r.op(
    {
      method: "GET",
      url: "/v1/invitations",
      operationId: "listInvitations",
      summary: "List invitations with their status, newest first (never a token)",
      query: PageQuery.strict(),
      response: page(Invitation),
      paginated: true,
    },
    ({ clients, query, ctx }) => clients.keys.relay("listInvitations", query, ctx),
  );
  r.op(
    {
      method: "DELETE",
      url: "/v1/invitations/:invitation_id",
      operationId: "revokeInvitation",
      summary: "Revoke an invitation (an accepted one stays accepted)",
      params: InvitationIdParams,
      response: Invitation,
    },
    ({ clients, params, ctx }) => clients.keys.relay("revokeInvitation", params, ctx),
  );
});
