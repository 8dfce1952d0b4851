import { Organization, OrganizationIdParams, PageQuery, page } from "@tasksvc/contracts";
import { resource } from "../operations.js";

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
    ({ clients, query, ctx }) => clients.keys.relay("listOrganizations", query, ctx),
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
    ({ clients, params, ctx }) => clients.keys.relay("getOrganization", params, ctx),
  );
});
