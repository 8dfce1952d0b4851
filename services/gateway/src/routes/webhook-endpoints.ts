import {
  CreatedWebhookEndpoint,
  CreateWebhookEndpointBody,
  DeletedWebhookEndpoint,
  DeliveriesQuery,
  DeliveryAttempt,
  DeliveryParams,
  EndpointStatsQuery,
  PageQuery,
  ProbeResult,
  ReplayFailedBody,
  ReplayFailedResult,
  RotatedWebhookEndpoint,
  TestEventBody,
  UpdateWebhookEndpointBody,
  VerifyResult,
  WebhookDelivery,
  WebhookEndpoint,
  WebhookEndpointParams,
  WebhookEndpointStats,
  page,
} from "@tasksvc/contracts";
import { resource } from "../pipeline/resource.js";

// Spec 4, 5.4: Pro and Team.
export const webhookEndpoints = resource({ name: "webhook-endpoints", scopes: "webhooks", entitlement: "outbound_webhooks" }, (r) => {
  r.op(
    {
      method: "POST",
      url: "/v1/webhook-endpoints",
      operationId: "createWebhookEndpoint",
      summary: "Create a webhook endpoint, one per URL and up to the plan's number of endpoints (the signing secret is shown once)",
      body: CreateWebhookEndpointBody,
      status: 201,
      location: "/v1/webhook-endpoints/{id}",
      response: CreatedWebhookEndpoint,
      idempotent: true,
      // Kept sealed by the service, never in the gateway's record.
      secretInResponse: true,
    },
    // The plan's cap travels with the call, as the storage allowances do to upload-start.
    ({ clients, body, ctx, identity }) =>
      clients.webhooks.relay("createEndpoint", { ...body, limits: { webhook_endpoints: identity.limits.webhook_endpoints } }, ctx),
  );
  r.op(
    {
      method: "GET",
      url: "/v1/webhook-endpoints",
      operationId: "listWebhookEndpoints",
      summary: "List webhook endpoints, newest first (never the secret)",
      query: PageQuery.strict(),
      response: page(WebhookEndpoint),
      paginated: true,
    },
    ({ clients, query, ctx }) => clients.webhooks.relay("listEndpoints", query, ctx),
  );
  r.op(
    {
      method: "GET",
      url: "/v1/webhook-endpoints/:endpoint_id",
      operationId: "getWebhookEndpoint",
      summary: "Get a webhook endpoint (never the secret)",
      params: WebhookEndpointParams,
      response: WebhookEndpoint,
    },
    ({ clients, params, ctx }) => clients.webhooks.relay("getEndpoint", params, ctx),
  );
  r.op(
    {
      method: "PATCH",
      url: "/v1/webhook-endpoints/:endpoint_id",
      operationId: "updateWebhookEndpoint",
      summary: "Update a webhook endpoint's url, event types or enabled flag (enabling resets its failure count)",
      params: WebhookEndpointParams,
      body: UpdateWebhookEndpointBody,
      response: WebhookEndpoint,
    },
    ({ clients, params, body, ctx }) => clients.webhooks.relay("updateEndpoint", { endpoint_id: params.endpoint_id, patch: body }, ctx),
  );
  r.op(
    {
      method: "DELETE",
      url: "/v1/webhook-endpoints/:endpoint_id",
      operationId: "deleteWebhookEndpoint",
      summary: "Delete a webhook endpoint permanently",
      params: WebhookEndpointParams,
      response: DeletedWebhookEndpoint,
    },
    ({ clients, params, ctx }) => clients.webhooks.relay("deleteEndpoint", params, ctx),
  );
  r.op(
    {
      method: "POST",
      url: "/v1/webhook-endpoints/:endpoint_id/rotate-secret",
      operationId: "rotateWebhookSecret",
      summary: "Rotate the signing secret (the new one is shown once; the previous one keeps signing for about 24 h)",
      params: WebhookEndpointParams,
      response: RotatedWebhookEndpoint,
      idempotent: true,
      // Kept sealed by the service, never in the gateway's record.
      secretInResponse: true,
    },
    ({ clients, params, ctx }) => clients.webhooks.relay("rotateSecret", params, ctx),
  );
  r.op(
    {
      method: "POST",
      url: "/v1/webhook-endpoints/:endpoint_id/test-event",
      operationId: "sendWebhookTestEvent",
      summary: "Send one signed sample event now and report how the call ended (no delivery row)",
      params: WebhookEndpointParams,
      // Spec 4.1: a request without a body sends task.created.
      body: TestEventBody.optional(),
      response: ProbeResult,
    },
    ({ clients, params, body, ctx }) => clients.webhooks.relay("sendTestEvent", { endpoint_id: params.endpoint_id, event_type: body?.event_type }, ctx),
  );
  r.op(
    {
      method: "POST",
      url: "/v1/webhook-endpoints/:endpoint_id/verify",
      operationId: "verifyWebhookEndpoint",
      summary: "Send a signed verification probe; a 2xx answer marks the endpoint verified",
      params: WebhookEndpointParams,
      response: VerifyResult,
    },
    ({ clients, params, ctx }) => clients.webhooks.relay("verifyEndpoint", params, ctx),
  );
  r.op(
    {
      method: "GET",
      url: "/v1/webhook-endpoints/:endpoint_id/deliveries",
      operationId: "listWebhookDeliveries",
      summary: "The endpoint's delivery log, newest first, optionally of one state (never bodies)",
      params: WebhookEndpointParams,
      query: DeliveriesQuery.strict(),
      response: page(WebhookDelivery),
      paginated: true,
    },
    ({ clients, params, query, ctx }) => clients.webhooks.relay("listDeliveries", { ...query, endpoint_id: params.endpoint_id }, ctx),
  );
  r.op(
    {
      method: "GET",
      url: "/v1/webhook-endpoints/:endpoint_id/stats",
      operationId: "getWebhookEndpointStats",
      summary:
        "Delivery statistics: the endpoint's deliveries created since a time (24 hours ago by default, at most 30 days back) by state, their attempts and latency percentiles",
      params: WebhookEndpointParams,
      query: EndpointStatsQuery,
      response: WebhookEndpointStats,
    },
    ({ clients, params, query, ctx }) => clients.webhooks.relay("endpointStats", { ...query, endpoint_id: params.endpoint_id }, ctx),
  );
  r.op(
    {
      method: "GET",
      url: "/v1/webhook-endpoints/:endpoint_id/deliveries/:delivery_id/attempts",
      operationId: "listWebhookDeliveryAttempts",
      summary: "A delivery's attempts in order: time, status or error class, duration (never bodies)",
      params: DeliveryParams,
      query: PageQuery.strict(),
      response: page(DeliveryAttempt),
      paginated: true,
    },
    ({ clients, params, query, ctx }) => clients.webhooks.relay("listAttempts", { ...query, ...params }, ctx),
  );
  r.op(
    {
      method: "POST",
      url: "/v1/webhook-endpoints/:endpoint_id/deliveries/:delivery_id/replay",
      operationId: "replayWebhookDelivery",
      summary: "Replay a delivery as a new PENDING row with the same webhook-id (the original is unchanged)",
      params: DeliveryParams,
      status: 202,
      response: WebhookDelivery,
      errors: ["delivery_already_pending"],
    },
    ({ clients, params, ctx }) => clients.webhooks.relay("replayDelivery", params, ctx),
  );
  r.op(
    {
      method: "POST",
      url: "/v1/webhook-endpoints/:endpoint_id/deliveries/:delivery_id/retry",
      operationId: "retryWebhookDelivery",
      summary:
        "Retry a PENDING delivery now instead of when its retry schedule had it (repeating the call, or calling while an attempt is in flight, makes no second attempt)",
      params: DeliveryParams,
      status: 202,
      response: WebhookDelivery,
      errors: ["delivery_not_pending"],
    },
    ({ clients, params, ctx }) => clients.webhooks.relay("retryDelivery", params, ctx),
  );
  r.op(
    {
      method: "POST",
      url: "/v1/webhook-endpoints/:endpoint_id/replay-failed",
      operationId: "replayFailedWebhookDeliveries",
      summary: "Replay the failed and disabled deliveries created since a time, oldest first, at most 1000 per call",
      params: WebhookEndpointParams,
      body: ReplayFailedBody,
      status: 202,
      response: ReplayFailedResult,
    },
    ({ clients, params, body, ctx }) => clients.webhooks.relay("replayFailed", { endpoint_id: params.endpoint_id, since: body.since }, ctx),
  );
});
