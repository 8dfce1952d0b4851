import { z } from "zod";
import { Label, OpaqueId, PageQuery, Timestamp, page } from "./common.js";
import type { RpcCatalog } from "./rpc.js";
import { TaskEventType } from "./tasks.js";

// Webhook endpoints (spec 2.8, 3.4, 4, 4.1; DESIGN.md sections 4-5; issue 11).

/** Longest destination URL accepted; longer ones are almost always a mistake (or an attack). */
export const WEBHOOK_URL_MAX = 2048;

/** Spec 2.8: the endpoint as every read shows it; the signing secret is never part of it. */
export const WebhookEndpoint = z.object({
  id: z.string(),
  url: z.string(),
  enabled: z.boolean(),
  event_types: z.array(TaskEventType),
  verified: z.boolean(),
  disabled_reason: z.string().nullable(),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type WebhookEndpoint = z.infer<typeof WebhookEndpoint>;

/** The create response: the endpoint plus its signing secret, shown only here (and on a replay). */
export const CreatedWebhookEndpoint = WebhookEndpoint.extend({ secret: z.string() });
export type CreatedWebhookEndpoint = z.infer<typeof CreatedWebhookEndpoint>;

// The scheme and userinfo rules depend on WEBHOOK_ALLOW_HTTP, which only the webhooks service
// reads, so the schema checks the shape and the service checks the rest (with the same pointer).
const EndpointUrl = Label.min(1).max(WEBHOOK_URL_MAX);
/** An empty list subscribes to every type (spec 6); a type listed twice is refused, not merged. */
const EventTypes = z
  .array(TaskEventType)
  .max(TaskEventType.options.length)
  .refine((a) => new Set(a).size === a.length, { message: "must not repeat an event type" });

export const CreateWebhookEndpointBody = z.strictObject({
  url: EndpointUrl,
  event_types: EventTypes.optional(),
});
export type CreateWebhookEndpointBody = z.infer<typeof CreateWebhookEndpointBody>;

/** DESIGN.md section 4: url, event_types, enabled; enabling resets the failure count (spec 3.4). */
export const UpdateWebhookEndpointBody = z.strictObject({
  url: EndpointUrl.optional(),
  event_types: EventTypes.optional(),
  enabled: z.boolean().optional(),
});
export type UpdateWebhookEndpointBody = z.infer<typeof UpdateWebhookEndpointBody>;

export const WebhookEndpointParams = z.object({ endpoint_id: OpaqueId });
export const DeletedWebhookEndpoint = z.object({ id: z.string() });

export const webhooksRpc = {
  service: "webhooks",
  ops: {
    createEndpoint: { input: CreateWebhookEndpointBody, output: CreatedWebhookEndpoint },
    listEndpoints: { input: PageQuery, output: page(WebhookEndpoint) },
    getEndpoint: { input: WebhookEndpointParams, output: WebhookEndpoint },
    updateEndpoint: { input: z.object({ endpoint_id: OpaqueId, patch: UpdateWebhookEndpointBody }), output: WebhookEndpoint },
    deleteEndpoint: { input: WebhookEndpointParams, output: DeletedWebhookEndpoint },
  },
} as const satisfies RpcCatalog;
