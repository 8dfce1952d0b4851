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

/** The rotation response (spec 2.8): the endpoint, its new secret (shown once) and when the old one stops signing. */
export const RotatedWebhookEndpoint = WebhookEndpoint.extend({ secret: z.string(), previous_secret_expires_at: Timestamp });
export type RotatedWebhookEndpoint = z.infer<typeof RotatedWebhookEndpoint>;

/** How one outbound call ended (spec 4.1, test event): the values the API shows. */
export const ProbeOutcome = z.enum(["delivered", "blocked", "redirect_blocked", "request_failed", "timeout"]);
export type ProbeOutcome = z.infer<typeof ProbeOutcome>;

/** Test event body (spec 4.1): optional event type, task.created by default. */
export const TestEventBody = z.strictObject({ event_type: TaskEventType.optional() });
export type TestEventBody = z.infer<typeof TestEventBody>;

/** Spec 4.1: the probe result; `status` only when a response came. */
export const ProbeResult = z.object({
  outcome: ProbeOutcome,
  status: z.number().int().optional(),
  duration_ms: z.number().int().min(0),
});
export type ProbeResult = z.infer<typeof ProbeResult>;

/** DESIGN.md 4, verify: the probe result and the endpoint's `verified` flag after it. */
export const VerifyResult = ProbeResult.extend({ verified: z.boolean() });
export type VerifyResult = z.infer<typeof VerifyResult>;

export const DeliveryState = z.enum(["PENDING", "DELIVERING", "SUCCEEDED", "FAILED", "DISABLED"]);
export type DeliveryState = z.infer<typeof DeliveryState>;

/** Spec 2.9: one row of the delivery log (never a body, never a secret). */
export const WebhookDelivery = z.object({
  id: z.string(),
  event_id: z.string(),
  event_type: z.string(),
  state: DeliveryState,
  attempt_count: z.number().int(),
  last_status: z.number().int().nullable(),
  next_attempt_at: Timestamp.nullable(),
  created_at: Timestamp,
});
export type WebhookDelivery = z.infer<typeof WebhookDelivery>;

export const DeliveriesQuery = PageQuery.extend({ state: DeliveryState.optional() });
export type DeliveriesQuery = z.infer<typeof DeliveriesQuery>;

export const DeliveryParams = z.object({ endpoint_id: OpaqueId, delivery_id: OpaqueId });

/**
 * DESIGN.md 4: one attempt of a delivery: when, the status or the error class, how long (never a
 * body). `error_class` is null for an answered attempt; `status` null when no response came.
 */
export const DeliveryAttempt = z.object({
  attempt: z.number().int().min(1),
  attempted_at: Timestamp,
  outcome: ProbeOutcome.or(z.literal("no_outcome")),
  status: z.number().int().nullable(),
  error_class: z.string().nullable(),
  duration_ms: z.number().int().min(0).nullable(),
});
export type DeliveryAttempt = z.infer<typeof DeliveryAttempt>;

export const ReplayFailedBody = z.strictObject({ since: z.iso.datetime({ offset: true }) });
export type ReplayFailedBody = z.infer<typeof ReplayFailedBody>;
export const ReplayFailedResult = z.object({ replayed_count: z.number().int().min(0) });

export const webhooksRpc = {
  service: "webhooks",
  ops: {
    createEndpoint: { input: CreateWebhookEndpointBody, output: CreatedWebhookEndpoint },
    listEndpoints: { input: PageQuery, output: page(WebhookEndpoint) },
    getEndpoint: { input: WebhookEndpointParams, output: WebhookEndpoint },
    updateEndpoint: { input: z.object({ endpoint_id: OpaqueId, patch: UpdateWebhookEndpointBody }), output: WebhookEndpoint },
    deleteEndpoint: { input: WebhookEndpointParams, output: DeletedWebhookEndpoint },
    rotateSecret: { input: WebhookEndpointParams, output: RotatedWebhookEndpoint },
    // Both wait for one outbound call (WEBHOOK_TIMEOUT_MS, at most 60 s) made by the delivery service.
    sendTestEvent: { input: z.object({ endpoint_id: OpaqueId, event_type: TaskEventType.optional() }), output: ProbeResult, timeoutMs: 65_000 },
    verifyEndpoint: { input: WebhookEndpointParams, output: VerifyResult, timeoutMs: 65_000 },
    listDeliveries: { input: DeliveriesQuery.extend({ endpoint_id: OpaqueId }), output: page(WebhookDelivery) },
    listAttempts: { input: DeliveryParams.extend(PageQuery.shape), output: page(DeliveryAttempt) },
    replayDelivery: { input: DeliveryParams, output: WebhookDelivery },
    replayFailed: { input: z.object({ endpoint_id: OpaqueId, since: z.iso.datetime({ offset: true }) }), output: ReplayFailedResult },
  },
} as const satisfies RpcCatalog;

// ---------------------------------------------------------------------------------------------
// Between the webhooks service and the delivery service (issue 11; decision 0015). Never reached
// from HTTP: the gateway has clients of the registry's public catalogs only.

/** A signed request, ready to send: the delivery service adds nothing but the connection. */
export const SignedRequest = z.object({
  url: z.string(),
  /** webhook-id, webhook-timestamp, webhook-signature, content-type. */
  headers: z.record(z.string(), z.string()),
  body: z.string(),
  /**
   * The trace of the change this delivery announces (W3C traceparent, when tracing recorded
   * one): the delivery worker's call continues it. Never sent to the receiver.
   */
  traceparent: z.string().max(128).nullable().optional(),
});
export type SignedRequest = z.infer<typeof SignedRequest>;

/** What one outbound call came to, as the delivery service reports it. */
export const CallResult = z.object({
  outcome: ProbeOutcome,
  status: z.number().int().nullable(),
  error_class: z.string().nullable(),
  duration_ms: z.number().int().min(0),
  /** Retry-After in milliseconds, when a 429 or 503 sent one. */
  retry_after_ms: z.number().int().min(0).nullable(),
});
export type CallResult = z.infer<typeof CallResult>;

const JobRef = z.object({ delivery_id: z.string(), attempt: z.number().int().min(1) });

/**
 * A job on the delivery-job stream: "make these attempts, all to one endpoint". It carries no URL,
 * body or secret: the worker asks the webhooks service for the signed requests right before the
 * calls, so a job for an endpoint deleted or disabled meanwhile sends nothing. One message for
 * the attempts of one endpoint claimed together: JetStream's cost is per message, not per attempt.
 */
export const DeliveryJob = z.object({
  endpoint_id: z.string(),
  /** Past this instant the webhooks service dispatches the attempts again: a job seen later is dropped. */
  lease_until: Timestamp,
  deliveries: z.array(JobRef).min(1).max(1000),
});
export type DeliveryJob = z.infer<typeof DeliveryJob>;

export const webhookJobsStream = (namespace: string) => `${namespace}_webhook_jobs`;
export const webhookJobsSubject = (namespace: string) => `${namespace}.webhooks.jobs`;

/** The webhooks service's operations for the delivery worker (same queue group as its public catalog). */
export const webhookAttemptsRpc = {
  service: "webhooks",
  ops: {
    /** Signs each attempt still due (DELIVERING, this attempt, endpoint enabled); the others are `request: null`. */
    startAttempts: {
      input: z.object({ jobs: z.array(JobRef).min(1).max(1000) }),
      output: z.object({ attempts: z.array(JobRef.extend({ request: SignedRequest.nullable() })) }),
    },
    /** Records how attempts ended: state, counts, schedule, auto-disable. */
    recordAttempts: {
      input: z.object({
        results: z
          .array(JobRef.extend({ attempted_at: Timestamp, result: CallResult }))
          .min(1)
          .max(1000),
      }),
      output: z.object({ recorded: z.number().int() }),
    },
  },
} as const satisfies RpcCatalog;

/** The delivery service's one request/reply operation: a synchronous signed call (test event, verify). */
export const deliveryRpc = {
  service: "delivery",
  ops: {
    call: { input: SignedRequest, output: CallResult, timeoutMs: 65_000 },
  },
} as const satisfies RpcCatalog;
