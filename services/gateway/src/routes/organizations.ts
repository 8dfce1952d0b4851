import { AppError } from "@tasksvc/errors";
import { type Identity, Organization, OrganizationIdParams, PageQuery, page } from "@tasksvc/contracts";
import { resource } from "../pipeline/resource.js";

/**
 * No hop to the keys service: the name never changes, and the plan is as fresh as the identity,
 * which a plan change invalidates on every replica before it is answered.
 */
function ownOrganization(identity: Identity): Organization | undefined {
  if (identity.organization_name === undefined) return undefined;
  return { id: identity.organization_id, name: identity.organization_name, plan: identity.plan, created_at: identity.organization_created_at };
}

export const organizations = resource({ name: "organizations", scope: "workspaces:read" }, (r) => {
  r.op(
    {
      method: "GET",
      url: "/v1/organizations",
      operationId: "listOrganizations",
      summary: "List the credential's organization (always one page)",
      query: PageQuery.strict(),
      response: page(Organization),
      paginated: true,
    },
    async ({ clients, query, ctx, identity }) => {
      const own = ownOrganization(identity);
      return own ? { data: [own], has_more: false, next_cursor: null } : clients.keys.relay("listOrganizations", query, ctx);
    },
  );
  r.op(
    {
      method: "GET",
      url: "/v1/organizations/:organization_id",
      operationId: "getOrganization",
      summary: "Get the credential's organization",
      params: OrganizationIdParams,
      response: Organization,
    },
    async ({ clients, params, ctx, identity }) => {
      const own = ownOrganization(identity);
      if (own === undefined) return clients.keys.relay("getOrganization", params, ctx);
      // As the keys service answers another organization's id: it does not exist for this credential.
      if (params.organization_id !== own.id) throw new AppError("resource_not_found", `No organization with id ${params.organization_id} exists.`);
      return own;
    },
  );
});
