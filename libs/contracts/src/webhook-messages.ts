import { z } from "zod";
import { Timestamp } from "./common.js";
import type { RpcCatalog } from "./rpc.js";
import { OrgEventAsSent } from "./event-body.js";
import { EndpointEvent, EndpointFeedEvent } from "./events.js";
import { TaskFeedEvent, taskEventsStream } from "./tasks.js";
import { type DeliveryAttempt, ProbeOutcome } from "./webhooks.js";

// One schema per message that crosses a process: the sender builds its type from it and the receiver parses with it.

/** An events-feed item without its id (the `webhook-id` header); its text is built once per event and every attempt signs that text. */
export const WebhookEnvelope = z.union([TaskFeedEvent.omit({ id: true }), EndpointFeedEvent.omit({ id: true })]);
export type WebhookEnvelope = z.infer<typeof WebhookEnvelope>;

/** Ready to send: the delivery service adds nothing but the connection. */
export const SignedRequest = z.object({
  url: z.string(),
  headers: z.record(z.string(), z.string()),
  body: z.string(),
  /** Continued by the delivery worker's call; never sent to the receiver. */
  traceparent: z.string().max(128).nullable().optional(),
});
export type SignedRequest = z.infer<typeof SignedRequest>;

export const CallResult = z.object({
  outcome: ProbeOutcome,
  status: z.number().int().nullable(),
  error_class: z.string().nullable(),
  duration_ms: z.number().int().min(0),
  retry_after_ms: z.number().int().min(0).nullable(),
});
export type CallResult = z.infer<typeof CallResult>;

export type AttemptOutcome = DeliveryAttempt["outcome"];

export const AttemptRef = z.object({ delivery_id: z.string(), attempt: z.number().int().min(1) });
export type AttemptRef = z.infer<typeof AttemptRef>;

/** `send_at` (rate-limited endpoints only): the attempt starts within `send_window_ms` after it, or the worker hands it back. */
export const JobAttempt = AttemptRef.extend({ send_at: Timestamp.optional() });
export type JobAttempt = z.infer<typeof JobAttempt>;

/**
 * No URL, body or secret: the worker asks for the signed requests right before the calls, so an endpoint deleted or disabled
 * meanwhile gets nothing. One message per endpoint's claimed attempts, since JetStream's cost is per message.
 */
export const DeliveryJob = z.object({
  endpoint_id: z.string(),
  /** Past this the webhooks service dispatches the attempts again, so a job seen later is dropped. */
  lease_until: Timestamp,
  deliveries: z.array(JobAttempt).min(1).max(1000),
  send_window_ms: z.number().int().min(0).max(60_000).optional(),
});
export type DeliveryJob = z.infer<typeof DeliveryJob>;

export const webhookJobsStream = (namespace: string) => `${namespace}_webhook_jobs`;
export const webhookJobsSubject = (namespace: string) => `${namespace}.webhooks.jobs`;

/** `window_ms`: for that long no other worker may start this attempt; absent (an older worker), the attempt's lease stands for it. */
export const StartAttempt = AttemptRef.extend({ window_ms: z.number().int().min(1).max(3_600_000).optional() });
export type StartAttempt = z.infer<typeof StartAttempt>;

export const StartAttempts = z.object({ jobs: z.array(StartAttempt).min(1).max(1000) });
export type StartAttempts = z.infer<typeof StartAttempts>;

/** `occurred_at` lets the worker measure end-to-end lag without reading the body; optional for older replicas. */
export const StartedAttempt = AttemptRef.extend({
  request: SignedRequest.nullable(),
  occurred_at: Timestamp.optional(),
  /** With `request: null`: another worker's window runs until then (it may have died mid-call). Absent: nothing to send, now or later. */
  busy_until: Timestamp.optional(),
});
export type StartedAttempt = z.infer<typeof StartedAttempt>;
export const StartedAttempts = z.object({ attempts: z.array(StartedAttempt) });
export type StartedAttempts = z.infer<typeof StartedAttempts>;

/** Attempts reached after their send window: not failures, so each goes back to PENDING with a new send time. */
export const DeferAttempts = z.object({ jobs: z.array(AttemptRef).min(1).max(1000) });
export type DeferAttempts = z.infer<typeof DeferAttempts>;
export const DeferredAttempts = z.object({ deferred: z.number().int() });

export const ReportedAttempt = AttemptRef.extend({ attempted_at: Timestamp, result: CallResult });
export type ReportedAttempt = z.infer<typeof ReportedAttempt>;
export const RecordAttempts = z.object({ results: z.array(ReportedAttempt).min(1).max(1000) });
export type RecordAttempts = z.infer<typeof RecordAttempts>;
export const RecordedAttempts = z.object({ recorded: z.number().int() });

export const webhookAttemptsRpc = {
  service: "webhooks",
  ops: {
    startAttempts: { input: StartAttempts, output: StartedAttempts },
    recordAttempts: { input: RecordAttempts, output: RecordedAttempts },
    deferAttempts: { input: DeferAttempts, output: DeferredAttempts },
  },
} as const satisfies RpcCatalog;

/** `refused` is null when calls may go out (a name that does not resolve yet included). */
export const CheckDestination = z.object({ url: z.string() });
export const DestinationChecked = z.object({ refused: z.object({ reason: z.string(), message: z.string() }).nullable() });
export type DestinationChecked = z.infer<typeof DestinationChecked>;

/** The guard's verdict comes from the delivery service: it alone reads WEBHOOK_ALLOW_PRIVATE_TARGETS and resolves names from where calls are made. */
export const deliveryRpc = {
  service: "delivery",
  ops: {
    call: { input: SignedRequest, output: CallResult, timeoutMs: 65_000 },
    checkDestination: { input: CheckDestination, output: DestinationChecked },
  },
} as const satisfies RpcCatalog;

export const webhookMessages = {
  taskEvent: { schema: OrgEventAsSent, stream: taskEventsStream },
  /** Taken into the tasks service's events outbox, so it reaches the feed, the live stream and the fan-out in the event stream's one order. */
  endpointEvent: {
    schema: EndpointEvent,
    stream: (namespace: string) => `${namespace}_webhook_events`,
    subject: (namespace: string, type: EndpointEvent["type"]) => `${namespace}.evt.webhooks.${type}`,
    subjects: (namespace: string) => `${namespace}.evt.webhooks.>`,
  },
  deliveryJob: { schema: DeliveryJob, stream: webhookJobsStream, subject: webhookJobsSubject },
  startAttempts: webhookAttemptsRpc.ops.startAttempts,
  recordAttempts: webhookAttemptsRpc.ops.recordAttempts,
  deferAttempts: webhookAttemptsRpc.ops.deferAttempts,
  call: deliveryRpc.ops.call,
  checkDestination: deliveryRpc.ops.checkDestination,
  envelope: { schema: WebhookEnvelope },
} as const;
