import { z } from "zod";
import { Timestamp } from "./common.js";
import type { RpcCatalog } from "./rpc.js";
import { OrgEventAsSent } from "./event-body.js";
import { EndpointEvent, EndpointFeedEvent } from "./events.js";
import { TaskFeedEvent, taskEventsStream } from "./tasks.js";
import { type DeliveryAttempt, ProbeOutcome } from "./webhooks.js";

// Every message of outbound webhooks that crosses a process, one schema each, and the catalog
// that names them (as trigger.dev's worker catalogs do): the sender builds its type from the
// schema and the receiver parses with it, so the two cannot drift. The public resources
// (endpoints, the delivery log) are in webhooks.ts. Never reached from HTTP: the gateway has
// clients of the registry's public catalogs only.

/**
 * The body of a delivery, signed byte for byte: `{type, timestamp, data}` (Standard Webhooks),
 * the event's own time and the task after the change. Exactly an events-feed item without its
 * id, which travels as the `webhook-id` header. The fan-out builds its text once per event
 * (webhookBody) and stores it; every attempt and replay signs and sends that text.
 */
export const WebhookEnvelope = z.union([TaskFeedEvent.omit({ id: true }), EndpointFeedEvent.omit({ id: true })]);
export type WebhookEnvelope = z.infer<typeof WebhookEnvelope>;

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

/** How an attempt ended, as its row in the attempts log holds it. */
export type AttemptOutcome = DeliveryAttempt["outcome"];

/** One attempt of one delivery (1-based): what a job asks for, and what is started and reported. */
export const AttemptRef = z.object({ delivery_id: z.string(), attempt: z.number().int().min(1) });
export type AttemptRef = z.infer<typeof AttemptRef>;

/**
 * One attempt of a job. `send_at` is given for an endpoint with a rate limit only (DESIGN.md 11):
 * the attempt starts no earlier than it, and earlier than `send_at + send_window_ms`; a worker
 * that gets there later does not call and hands the attempt back (deferAttempts). Absent: send at
 * once, as every job of a dispatcher from before rate limits.
 */
export const JobAttempt = AttemptRef.extend({ send_at: Timestamp.optional() });
export type JobAttempt = z.infer<typeof JobAttempt>;

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
  deliveries: z.array(JobAttempt).min(1).max(1000),
  /** With `send_at`: how many milliseconds after it an attempt may still start (0 when absent). */
  send_window_ms: z.number().int().min(0).max(60_000).optional(),
});
export type DeliveryJob = z.infer<typeof DeliveryJob>;

export const webhookJobsStream = (namespace: string) => `${namespace}_webhook_jobs`;
export const webhookJobsSubject = (namespace: string) => `${namespace}.webhooks.jobs`;

/**
 * One attempt a worker is about to make. `window_ms`: how long from now the worker may take to
 * begin the call and end it (it begins none later, and the call's own timeout ends it). For that
 * long no other worker may start this attempt; absent (a worker from before windows), the
 * attempt's lease stands for it.
 */
export const StartAttempt = AttemptRef.extend({ window_ms: z.number().int().min(1).max(3_600_000).optional() });
export type StartAttempt = z.infer<typeof StartAttempt>;

/** startAttempts: the attempts a worker is about to make. */
export const StartAttempts = z.object({ jobs: z.array(StartAttempt).min(1).max(1000) });
export type StartAttempts = z.infer<typeof StartAttempts>;

/**
 * One started attempt: its signed request, or null when there is nothing to send. `occurred_at`
 * is the event's own time, the envelope's `timestamp`, given beside the body so that the worker
 * measures the end-to-end lag without reading the body. Optional: a webhooks replica from
 * before it answers without, and the worker then leaves the lag unmeasured.
 */
export const StartedAttempt = AttemptRef.extend({
  request: SignedRequest.nullable(),
  occurred_at: Timestamp.optional(),
  /**
   * With `request: null`: another worker started this attempt and its window runs until then.
   * The attempt may be started again once it has passed (if it is still current: that worker may
   * have died mid-call). Absent: nothing to send, now or later.
   */
  busy_until: Timestamp.optional(),
});
export type StartedAttempt = z.infer<typeof StartedAttempt>;
export const StartedAttempts = z.object({ attempts: z.array(StartedAttempt) });
export type StartedAttempts = z.infer<typeof StartedAttempts>;

/**
 * deferAttempts: attempts the worker did not make because it reached them after their send
 * window (a rate-limited endpoint's). Not attempts and not failures: each goes back to PENDING,
 * due now, and gets a new send time.
 */
export const DeferAttempts = z.object({ jobs: z.array(AttemptRef).min(1).max(1000) });
export type DeferAttempts = z.infer<typeof DeferAttempts>;
export const DeferredAttempts = z.object({ deferred: z.number().int() });

/** recordAttempts: how attempts ended, as the worker reports them. */
export const ReportedAttempt = AttemptRef.extend({ attempted_at: Timestamp, result: CallResult });
export type ReportedAttempt = z.infer<typeof ReportedAttempt>;
export const RecordAttempts = z.object({ results: z.array(ReportedAttempt).min(1).max(1000) });
export type RecordAttempts = z.infer<typeof RecordAttempts>;
export const RecordedAttempts = z.object({ recorded: z.number().int() });

/** The webhooks service's operations for the delivery worker (same queue group as its public catalog). */
export const webhookAttemptsRpc = {
  service: "webhooks",
  ops: {
    /**
     * Signs each attempt still due (DELIVERING, this attempt, endpoint enabled, no other worker's
     * window open on it) and opens its window; the others are `request: null`.
     */
    startAttempts: { input: StartAttempts, output: StartedAttempts },
    /** Records how attempts ended: state, counts, schedule, auto-disable. */
    recordAttempts: { input: RecordAttempts, output: RecordedAttempts },
    /** Gives back attempts reached too late for their send window: PENDING again, same attempt count, no attempt row. */
    deferAttempts: { input: DeferAttempts, output: DeferredAttempts },
  },
} as const satisfies RpcCatalog;

/**
 * checkDestination: would the egress guard refuse calls to this URL (its rules, a blocked literal
 * address, a name resolving only to blocked ones)? Asked when an endpoint's URL is set. `refused`
 * is null when calls may go out (a name that does not resolve yet included).
 */
export const CheckDestination = z.object({ url: z.string() });
export const DestinationChecked = z.object({ refused: z.object({ reason: z.string(), message: z.string() }).nullable() });
export type DestinationChecked = z.infer<typeof DestinationChecked>;

/**
 * The delivery service's request/reply operations: a synchronous signed call (test event,
 * verify), and the guard's verdict on a destination (it alone reads WEBHOOK_ALLOW_PRIVATE_TARGETS
 * and resolves names from where the calls are made).
 */
export const deliveryRpc = {
  service: "delivery",
  ops: {
    call: { input: SignedRequest, output: CallResult, timeoutMs: 65_000 },
    checkDestination: { input: CheckDestination, output: DestinationChecked },
  },
} as const satisfies RpcCatalog;

/**
 * The catalog: each message by name, with its schema and where it travels. Streams and subjects
 * are per namespace; the request/reply operations are in the two RPC catalogs above.
 */
export const webhookMessages = {
  /**
   * The organizations' events as the fan-out consumes them, from the tasks service's event stream
   * (it declares the stream): task events and, taken in from `endpointEvent`, the endpoints' own.
   */
  taskEvent: { schema: OrgEventAsSent, stream: taskEventsStream },
  /**
   * An endpoint disabled or enabled: the webhooks service's outbox relays it here (its own
   * stream), and the tasks service takes it into the events outbox, so that it reaches the feed,
   * the live stream and the fan-out in the one order of the event stream.
   */
  endpointEvent: {
    schema: EndpointEvent,
    stream: (namespace: string) => `${namespace}_webhook_events`,
    subject: (namespace: string, type: EndpointEvent["type"]) => `${namespace}.evt.webhooks.${type}`,
    subjects: (namespace: string) => `${namespace}.evt.webhooks.>`,
  },
  /** The dispatcher's jobs for the delivery workers: a work queue, a job gone once acknowledged. */
  deliveryJob: { schema: DeliveryJob, stream: webhookJobsStream, subject: webhookJobsSubject },
  /** Worker → webhooks service, before the calls and after them. */
  startAttempts: webhookAttemptsRpc.ops.startAttempts,
  recordAttempts: webhookAttemptsRpc.ops.recordAttempts,
  deferAttempts: webhookAttemptsRpc.ops.deferAttempts,
  /** Webhooks service → delivery service: one call made now (test event, verify). */
  call: deliveryRpc.ops.call,
  /** Webhooks service → delivery service: would the guard refuse this endpoint URL? */
  checkDestination: deliveryRpc.ops.checkDestination,
  /** What the receiver gets, and what is signed (stored once per event). */
  envelope: { schema: WebhookEnvelope },
} as const;
