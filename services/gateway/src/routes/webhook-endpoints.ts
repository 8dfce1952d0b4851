import {
  CreatedWebhookEndpoint,
  CreateWebhookEndpointBody,
  DeletedWebhookEndpoint,
  PageQuery,
  UpdateWebhookEndpointBody,
  WebhookEndpoint,
  WebhookEndpointParams,
  page,
} from "@tasksvc/contracts";
import { resource } from "../operations.js";

// Every webhook operation needs the plan entitlement outbound_webhooks (spec 4, 5.4): Pro and Team.
export const webhookEndpoints = resource("webhook-endpoints", (r) => {
  r.op(
    {
      method: "POST",
      url: "/v1/webhook-endpoints",
      summary: "Create a webhook endpoint (the signing secret is shown once)",
      scope: "webhooks:write",
      entitlement: "outbound_webhooks",
      body: CreateWebhookEndpointBody,
      status: 201,
      response: CreatedWebhookEndpoint,
      idempotent: true,
      serviceIdempotency: true,
    },
    ({ clients, body, ctx }) => clients.webhooks.call("createEndpoint", body, ctx),
  );
  r.op(
    {
      method: "GET",
      url: "/v1/webhook-endpoints",
      summary: "List webhook endpoints, newest first (never the secret)",
      scope: "webhooks:read",
      entitlement: "outbound_webhooks",
      query: PageQuery.strict(),
      response: page(WebhookEndpoint),
      paginated: true,
    },
    ({ clients, query, ctx }) => clients.webhooks.call("listEndpoints", query, ctx),
  );
  r.op(
    {
      method: "GET",
      url: "/v1/webhook-endpoints/:endpoint_id",
      summary: "Get a webhook endpoint (never the secret)",
      scope: "webhooks:read",
      entitlement: "outbound_webhooks",
      params: WebhookEndpointParams,
      response: WebhookEndpoint,
    },
    ({ clients, params, ctx }) => clients.webhooks.call("getEndpoint", params, ctx),
  );
  r.op(
    {
      method: "PATCH",
      url: "/v1/webhook-endpoints/:endpoint_id",
      summary: "Update a webhook endpoint's url, event types or enabled flag (enabling resets its failure count)",
      scope: "webhooks:write",
      entitlement: "outbound_webhooks",
      params: WebhookEndpointParams,
      body: UpdateWebhookEndpointBody,
      response: WebhookEndpoint,
    },
    ({ clients, params, body, ctx }) => clients.webhooks.call("updateEndpoint", { endpoint_id: params.endpoint_id, patch: body }, ctx),
  );
  r.op(
    {
      method: "DELETE",
      url: "/v1/webhook-endpoints/:endpoint_id",
      summary: "Delete a webhook endpoint permanently",
      scope: "webhooks:write",
      entitlement: "outbound_webhooks",
      params: WebhookEndpointParams,
      response: DeletedWebhookEndpoint,
    },
    ({ clients, params, ctx }) => clients.webhooks.call("deleteEndpoint", params, ctx),
  );
});
