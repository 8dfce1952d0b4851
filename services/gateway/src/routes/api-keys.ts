import { ApiKey, CreateApiKeyBody, CreatedApiKey, KeyIdParams, PageQuery, RevokedApiKey, page } from "@tasksvc/contracts";
import { resource } from "../pipeline/resource.js";

export const apiKeys = resource({ name: "api-keys", scope: "api-keys:manage" }, (r) => {
  r.op(
    {
      method: "POST",
      url: "/v1/api-keys",
      operationId: "createApiKey",
      summary: "Mint an API key (the secret is shown once)",
      body: CreateApiKeyBody,
      status: 201,
      location: "/v1/api-keys/{id}",
      response: CreatedApiKey,
      idempotent: true,
      // Not kept in the gateway's record; a replay asks the keys service again.
      secretInResponse: true,
    },
    ({ clients, body, ctx }) => clients.keys.relay("createApiKey", body, ctx),
  );
  r.op(
    {
      method: "GET",
      url: "/v1/api-keys",
      operationId: "listApiKeys",
      summary: "List API keys (legacy rows too; never the secret)",
      query: PageQuery.strict(),
      response: page(ApiKey),
      paginated: true,
    },
    ({ clients, query, ctx }) => clients.keys.relay("listApiKeys", query, ctx),
  );
  r.op(
    {
      method: "DELETE",
      url: "/v1/api-keys/:key_id",
      operationId: "revokeApiKey",
      summary: "Revoke an API key (legacy keys are soft-revoked)",
      params: KeyIdParams,
      response: RevokedApiKey,
    },
    ({ clients, params, ctx }) => clients.keys.relay("revokeApiKey", params, ctx),
  );
});
