import { z } from "zod";
import { CreatedAt, EXAMPLE_INSTANT, Label, ObjectId, OpaqueId, PageQuery, Timestamp, UpdatedAt, page } from "./common.js";
import type { RpcCatalog } from "./rpc.js";
import { EventType } from "./event-types.js";

// Webhook endpoints (spec 2.8, 3.4, 4, 4.1; DESIGN.md sections 4-5).

/** Longer ones are almost always a mistake, or an attack. */
export const WEBHOOK_URL_MAX = 2048;

const ENDPOINT_ID = "whe_8kQ3mT6pL2vX9nD4bR7sW1";
const DELIVERY_ID = "whd_5pL8xQ2mT7vK4nD1bR9sW3";
const EXAMPLE_URL = "https://hooks.example.com/tasksvc";
const ENABLED = { description: "Whether deliveries are sent (false after auto-disable or by choice).", examples: [true] };
const EVENT_TYPES = {
  description:
    "The event types delivered; every task.* type but task.purged when absent or empty. task.purged and the comment.* types are delivered only when listed. The webhook_endpoint.* types (another endpoint of the organization disabled or enabled) are delivered only when listed, and never to the endpoint they describe.",
  examples: [["task.created", "task.updated"]],
};
const VERIFIED = { description: "Whether the endpoint answered a verification probe with a 2xx.", examples: [true] };
const SECRET = {
  description: "The signing secret (`whsec_…`): shown only in this answer. Verify each delivery's `webhook-signature` with it.",
  examples: ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"],
};
const EVENT_TYPE = { description: "The event's type.", examples: ["task.created"] };
const OUTCOME = {
  description: "How the call ended: delivered (a 2xx), request_failed, timeout, redirect_blocked, blocked or no_outcome.",
  examples: ["delivered"],
};
const STATUS = { description: "The HTTP status the endpoint answered; null when none.", examples: [204] };
const RATE_LIMIT = {
  description:
    "At most this many deliveries start per second, counted over any one-second window and across every delivery worker; deliveries past it wait their turn (they never fail because of it). null: no limit.",
  examples: [50],
};
const RateLimit = z.number().int().min(1).max(10_000).nullable();
const DURATION = { description: "How long the call took, in milliseconds.", examples: [42] };

/** The signing secret is never part of it. */
export const WebhookEndpoint = z.object({
  id: z.string().meta({ description: "The endpoint's id.", examples: [ENDPOINT_ID] }),
  url: z.string().meta({ description: "An https URL.", examples: [EXAMPLE_URL] }),
  enabled: z.boolean().meta(ENABLED),
  event_types: z.array(EventType).meta(EVENT_TYPES),
  verified: z.boolean().meta(VERIFIED),
  disabled_reason: z
    .string()
    .nullable()
    .meta({ description: "Why it was disabled automatically; null when enabled or disabled by hand.", examples: [null] }),
  failure_count: z
    .number()
    .int()
    .min(0)
    .meta({
      description:
        "Consecutive failed delivery attempts now: 0 after any success, and after enabling. The endpoint is disabled automatically when it grows too long and the endpoint has had no success for days.",
      examples: [0],
    }),
  last_success_at: Timestamp.nullable().meta({
    description: "When a delivery attempt last got a 2xx answer; null when none has.",
    examples: [EXAMPLE_INSTANT],
  }),
  last_failure_at: Timestamp.nullable().meta({ description: "When a delivery attempt last failed; null when none has.", examples: [null] }),
  rate_limit: RateLimit.meta(RATE_LIMIT),
  created_at: CreatedAt,
  updated_at: UpdatedAt,
});
export type WebhookEndpoint = z.infer<typeof WebhookEndpoint>;

/** Shown only here (and on a replay). */
export const CreatedWebhookEndpoint = WebhookEndpoint.extend({ secret: z.string().meta(SECRET) });
export type CreatedWebhookEndpoint = z.infer<typeof CreatedWebhookEndpoint>;

// The scheme and userinfo rules depend on WEBHOOK_ALLOW_HTTP, which only the webhooks service reads, so the schema checks the shape and the service the rest.
const EndpointUrl = Label.min(1).max(WEBHOOK_URL_MAX);
/** A type listed twice is refused, not merged. */
const EventTypes = z
  .array(EventType)
  .max(EventType.options.length)
  .refine((a) => new Set(a).size === a.length, { message: "must not repeat an event type" });

export const CreateWebhookEndpointBody = z.strictObject({
  url: EndpointUrl.meta({
    description:
      "Where deliveries go: an https URL without user name or password. Stored as a URL parser writes it (scheme and host in lower case, the default port dropped), and unique in the organization: a URL another of its endpoints has is refused.",
    examples: [EXAMPLE_URL],
  }),
  event_types: EventTypes.optional().meta(EVENT_TYPES),
  rate_limit: RateLimit.optional().meta(RATE_LIMIT),
});
export type CreateWebhookEndpointBody = z.infer<typeof CreateWebhookEndpointBody>;

/** Enabling resets the failure count (spec 3.4). */
export const UpdateWebhookEndpointBody = z.strictObject({
  url: EndpointUrl.optional().meta({
    description: "A new destination, with the create's rules: https, stored as a URL parser writes it, unique in the organization.",
    examples: [EXAMPLE_URL],
  }),
  event_types: EventTypes.optional().meta(EVENT_TYPES),
  enabled: z.boolean().optional().meta(ENABLED),
  rate_limit: RateLimit.optional().meta(RATE_LIMIT),
});
export type UpdateWebhookEndpointBody = z.infer<typeof UpdateWebhookEndpointBody>;

const EndpointIdParam = OpaqueId.meta({ description: "The webhook endpoint's id.", examples: [ENDPOINT_ID] });
export const WebhookEndpointParams = z.object({ endpoint_id: EndpointIdParam });
export const DeletedWebhookEndpoint = z.object({ id: ObjectId });

export const RotatedWebhookEndpoint = WebhookEndpoint.extend({
  secret: z.string().meta(SECRET),
  previous_secret_expires_at: Timestamp.meta({
    description: "Until when the previous secret still signs too (both signatures are sent).",
    examples: [EXAMPLE_INSTANT],
  }),
});
export type RotatedWebhookEndpoint = z.infer<typeof RotatedWebhookEndpoint>;

export const ProbeOutcome = z.enum(["delivered", "blocked", "redirect_blocked", "request_failed", "timeout"]);
export type ProbeOutcome = z.infer<typeof ProbeOutcome>;

export const TestEventBody = z.strictObject({ event_type: EventType.optional().meta(EVENT_TYPE) });
export type TestEventBody = z.infer<typeof TestEventBody>;

export const ProbeResult = z.object({
  outcome: ProbeOutcome.meta(OUTCOME),
  status: z.number().int().optional().meta(STATUS),
  duration_ms: z.number().int().min(0).meta(DURATION),
});
export type ProbeResult = z.infer<typeof ProbeResult>;

export const VerifyResult = ProbeResult.extend({ verified: z.boolean().meta(VERIFIED) });
export type VerifyResult = z.infer<typeof VerifyResult>;

export const DeliveryState = z.enum(["PENDING", "DELIVERING", "SUCCEEDED", "FAILED", "DISABLED"]);
export type DeliveryState = z.infer<typeof DeliveryState>;

/** Never a body, never a secret. */
export const WebhookDelivery = z.object({
  id: z.string().meta({ description: "The delivery's id.", examples: [DELIVERY_ID] }),
  event_id: z.string().meta({ description: "The event's id: the `webhook-id` header of every attempt of it.", examples: ["evt_2nK7xQ4mT9pL3vD6bR8sW5"] }),
  event_type: z.string().meta(EVENT_TYPE),
  state: DeliveryState.meta({ description: "Where the delivery stands.", examples: ["SUCCEEDED"] }),
  attempt_count: z
    .number()
    .int()
    .meta({ description: "Attempts made so far.", examples: [1] }),
  last_status: z
    .number()
    .int()
    .nullable()
    .meta({ description: "The HTTP status of the last attempt; null when none answered.", examples: [204] }),
  next_attempt_at: Timestamp.nullable().meta({ description: "When the next attempt is due; null when none is.", examples: [null] }),
  created_at: CreatedAt,
});
export type WebhookDelivery = z.infer<typeof WebhookDelivery>;

export const DeliveriesQuery = PageQuery.extend({
  state: DeliveryState.optional().meta({ description: "Only deliveries in this state.", examples: ["FAILED"] }),
});
export type DeliveriesQuery = z.infer<typeof DeliveriesQuery>;

export const DeliveryParams = z.object({
  endpoint_id: EndpointIdParam,
  delivery_id: OpaqueId.meta({ description: "The delivery's id.", examples: [DELIVERY_ID] }),
});

/** Never a body. */
export const DeliveryAttempt = z.object({
  attempt: z
    .number()
    .int()
    .min(1)
    .meta({ description: "The attempt's number, from 1.", examples: [1] }),
  attempted_at: Timestamp.meta({ description: "When the attempt was made.", examples: [EXAMPLE_INSTANT] }),
  outcome: ProbeOutcome.or(z.literal("no_outcome")).meta(OUTCOME),
  status: z.number().int().nullable().meta(STATUS),
  error_class: z
    .string()
    .nullable()
    .meta({ description: "What went wrong when the call failed (dns, connect, tls, timeout, …); null on success.", examples: [null] }),
  duration_ms: z.number().int().min(0).nullable().meta(DURATION),
});
export type DeliveryAttempt = z.infer<typeof DeliveryAttempt>;

export const ReplayFailedBody = z.strictObject({
  since: z.iso
    .datetime({ offset: true })
    .meta({ description: "Replay the failed and disabled deliveries created at or after this time.", examples: [EXAMPLE_INSTANT] }),
});
export type ReplayFailedBody = z.infer<typeof ReplayFailedBody>;
export const ReplayFailedResult = z.object({
  replayed_count: z
    .number()
    .int()
    .min(0)
    .meta({ description: "How many deliveries were queued again.", examples: [12] }),
});

export const EndpointStatsQuery = z.strictObject({
  since: z.iso
    .datetime({ offset: true })
    .optional()
    .meta({
      description:
        "Count the deliveries created at or after this time (ISO 8601). Default: 24 hours ago. An earlier time than 30 days ago counts from 30 days ago, as far back as the delivery log goes.",
      examples: [EXAMPLE_INSTANT],
    }),
});
export type EndpointStatsQuery = z.infer<typeof EndpointStatsQuery>;

const count = (description: string, example: number) =>
  z
    .number()
    .int()
    .min(0)
    .meta({ description, examples: [example] });
const percentile = (description: string, example: number) =>
  z
    .number()
    .int()
    .min(0)
    .nullable()
    .meta({ description, examples: [example] });

/** Exact: the same figures the delivery log and the attempts lists give. */
export const WebhookEndpointStats = z.object({
  since: Timestamp.meta({
    description: "The start of the window counted: the `since` asked for (to the millisecond), or 24 hours ago, and never more than 30 days ago.",
    examples: [EXAMPLE_INSTANT],
  }),
  deliveries: z
    .object({
      pending: count("Waiting for their first attempt or for a retry.", 3),
      delivering: count("With an attempt in flight now.", 1),
      succeeded: count("Delivered: the endpoint answered an attempt with a 2xx.", 1412),
      failed: count("Given up after the last attempt of the retry schedule.", 2),
      disabled: count("Stopped because the endpoint was disabled.", 0),
    })
    .meta({
      description: "The deliveries created since `since`, by the state each is in now.",
      examples: [{ pending: 3, delivering: 1, succeeded: 1412, failed: 2, disabled: 0 }],
    }),
  attempts: z
    .object({
      total: count("Attempts made for those deliveries, retries included.", 1431),
      failed: count("Those attempts that did not get a 2xx answer (an error status, a timeout, a refused or lost call).", 19),
    })
    .meta({ description: "The attempts made for those deliveries, as their attempts lists show them.", examples: [{ total: 1431, failed: 19 }] }),
  latency_ms: z
    .object({
      p50: percentile("Half of the timed attempts took at most this long, in milliseconds; null when there is none.", 42),
      p99: percentile("99% of the timed attempts took at most this long, in milliseconds; null when there is none.", 380),
    })
    .meta({
      description:
        "How long the attempts took (their `duration_ms`; an attempt whose outcome never came back has none), as percentiles: exact up to 100 ms, within 2.6% above.",
      examples: [{ p50: 42, p99: 380 }],
    }),
});
export type WebhookEndpointStats = z.infer<typeof WebhookEndpointStats>;

/** Resolved by the gateway with the credential (any `set-limits` override included). */
const EndpointLimits = z.object({ webhook_endpoints: z.number().int().min(0) });

export const webhooksRpc = {
  service: "webhooks",
  ops: {
    createEndpoint: { input: CreateWebhookEndpointBody.extend({ limits: EndpointLimits }), output: CreatedWebhookEndpoint },
    listEndpoints: { input: PageQuery, output: page(WebhookEndpoint) },
    getEndpoint: { input: WebhookEndpointParams, output: WebhookEndpoint },
    updateEndpoint: { input: z.object({ endpoint_id: OpaqueId, patch: UpdateWebhookEndpointBody }), output: WebhookEndpoint },
    deleteEndpoint: { input: WebhookEndpointParams, output: DeletedWebhookEndpoint },
    rotateSecret: { input: WebhookEndpointParams, output: RotatedWebhookEndpoint },
    // Both wait for one outbound call (WEBHOOK_TIMEOUT_MS, at most 60 s) made by the delivery service.
    sendTestEvent: { input: z.object({ endpoint_id: OpaqueId, event_type: EventType.optional() }), output: ProbeResult, timeoutMs: 65_000 },
    verifyEndpoint: { input: WebhookEndpointParams, output: VerifyResult, timeoutMs: 65_000 },
    listDeliveries: { input: DeliveriesQuery.extend({ endpoint_id: OpaqueId }), output: page(WebhookDelivery) },
    listAttempts: { input: DeliveryParams.extend(PageQuery.shape), output: page(DeliveryAttempt) },
    replayDelivery: { input: DeliveryParams, output: WebhookDelivery },
    retryDelivery: { input: DeliveryParams, output: WebhookDelivery },
    replayFailed: { input: z.object({ endpoint_id: OpaqueId, since: z.iso.datetime({ offset: true }) }), output: ReplayFailedResult },
    endpointStats: { input: EndpointStatsQuery.extend({ endpoint_id: OpaqueId }), output: WebhookEndpointStats },
  },
} as const satisfies RpcCatalog;
