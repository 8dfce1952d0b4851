import { CreatedOAuthClient, CreateOAuthClientBody, DeletedOAuthClient, OAuthClient, OAuthClientIdParams, PageQuery, page } from "@tasksvc/contracts";
import { resource } from "../pipeline/resource.js";

// The token, revocation and introspection endpoints take client credentials, not a bearer
// credential, so they are routes of the HTTP edge, not operations here.
export const oauthClients = resource({ name: "oauth-clients", scope: "api-keys:manage" }, (r) => {
  r.op(
    {
      method: "POST",
      url: "/v1/oauth-clients",
      operationId: "createOAuthClient",
      summary: "Create an OAuth client for machine-to-machine tokens (the secret is shown once)",
      body: CreateOAuthClientBody,
      status: 201,
      location: "/v1/oauth-clients/{id}",
      response: CreatedOAuthClient,
      idempotent: true,
      // Not kept in the gateway's record; a replay asks the keys service again.
      secretInResponse: true,
      errors: ["limit_reached"],
    },
    ({ clients, body, ctx }) => clients.keys.relay("createOAuthClient", body, ctx),
  );
  r.op(
    {
      method: "GET",
      url: "/v1/oauth-clients",
      operationId: "listOAuthClients",
      summary: "List OAuth clients, newest first (never a secret)",
      query: PageQuery.strict(),
      response: page(OAuthClient),
      paginated: true,
    },
    ({ clients, query, ctx }) => clients.keys.relay("listOAuthClients", query, ctx),
  );
  r.op(
    {
      method: "GET",
      url: "/v1/oauth-clients/:oauth_client_id",
      operationId: "getOAuthClient",
      summary: "Get an OAuth client (never its secret)",
      params: OAuthClientIdParams,
      response: OAuthClient,
    },
    ({ clients, params, ctx }) => clients.keys.relay("getOAuthClient", params, ctx),
  );
  r.op(
    {
      method: "DELETE",
      url: "/v1/oauth-clients/:oauth_client_id",
      operationId: "deleteOAuthClient",
      summary: "Delete an OAuth client: its tokens stop working on the next request",
      params: OAuthClientIdParams,
      response: DeletedOAuthClient,
    },
    ({ clients, params, ctx }) => clients.keys.relay("deleteOAuthClient", params, ctx),
  );
});
