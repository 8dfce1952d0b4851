import {
  systemContext,
  webhookMessages,
  type AttemptRef,
  type CallResult,
  type ReportedAttempt,
  type RpcContext,
  type SignedRequest,
  type StartedAttempt,
  type webhookAttemptsRpc,
} from "@tasksvc/contracts";
import type { Logger } from "@tasksvc/logger";
import { consume, type Consumption, type NatsConnection, type RpcClient } from "@tasksvc/nats";
import {
  contextFromTraceparent,
  inSpan,
  SpanKind,
  tracingEnabled,
  webhookAttemptDuration,
  webhookAttempts,
  webhookDeliveryLag,
  type Check,
} from "@tasksvc/telemetry";
import { batcher } from "./batch.js";

export interface WorkerOptions {
  nc: NatsConnection;
  namespace: string;
  log: Logger;
  webhooks: RpcClient<typeof webhookAttemptsRpc>;
  send(request: SignedRequest): Promise<CallResult>;
  /** WEBHOOK_CONCURRENCY: calls in flight in this process. */
  concurrency: number;
  /** How long a job may take here before JetStream hands it to another worker. */
  ackWaitMs: number;
  /** The replica's health: the consumer reports whether it is attached. */
  health?: { check(name: string, fn: Check): () => void };
  now?: () => Date;
}

/** Durable names may not contain dots: the namespace joins with `_`. Replicas share it. */
export const deliveryDurable = (namespace: string) => `${namespace}_delivery`;

/** The context of the worker's internal calls: no organization, no caller. */
const systemCtx = (): RpcContext => systemContext(`delivery-${Date.now().toString(36)}`);

/**
 * The delivery worker (decision 0015): takes jobs from the job stream, asks the webhooks service
 * for each one's signed request (none when the delivery was deleted, its endpoint disabled, or
 * the attempt already dispatched again), makes the call, reports the outcome, then acks.
 * Starts and reports are batched: one request for many jobs.
 *
 * A job is acked only once its outcome is recorded. If the report fails, the job comes back
 * (nak with backoff) and is started again, which answers nothing to send once the lease has run
 * out and the dispatcher counted the attempt: at least once, never lost.
 */
export function startWorker(o: WorkerOptions): Promise<Consumption> {
  const now = o.now ?? (() => new Date());
  const starts = batcher<AttemptRef, StartedAttempt>(async (jobs) => (await o.webhooks.call("startAttempts", { jobs }, systemCtx())).attempts, {
    maxSize: 200,
    maxWaitMs: 2,
  });
  const records = batcher(
    async (results: ReportedAttempt[]) => {
      await o.webhooks.call("recordAttempts", { results }, systemCtx());
      return results.map(() => true);
    },
    { maxSize: 200, maxWaitMs: 10 },
  );

  const slots = semaphore(o.concurrency);

  /** One attempt: a slot, the call, then its report (batched with others'). */
  async function attempt(ref: AttemptRef, request: SignedRequest, occurredAt: string | undefined): Promise<void> {
    const release = await slots.acquire();
    let result: CallResult;
    const attemptedAt = now().toISOString();
    const started = performance.now();
    try {
      // The call continues the trace of the change it announces (stored with the delivery).
      result =
        tracingEnabled() && request.traceparent
          ? await inSpan(
              "webhook POST",
              {
                kind: SpanKind.CLIENT,
                parent: contextFromTraceparent(request.traceparent),
                attributes: { "http.request.method": "POST", "tasksvc.delivery_id": ref.delivery_id, "tasksvc.attempt": ref.attempt },
              },
              async (span) => {
                const r = await o.send(request);
                span.setAttributes({ "tasksvc.outcome": r.outcome, ...(r.status === null ? {} : { "http.response.status_code": r.status }) });
                return r;
              },
            )
          : await o.send(request);
    } finally {
      webhookAttemptDuration.observe((performance.now() - started) / 1000);
      release();
    }
    webhookAttempts.inc({ outcome: result.outcome });
    // End to end, from the change (the event's own time, as the webhooks service gave it).
    if (result.outcome === "delivered" && occurredAt !== undefined) webhookDeliveryLag.observe(Math.max(0, Date.now() - Date.parse(occurredAt)) / 1000);
    await records.add({ ...ref, attempted_at: attemptedAt, result });
  }

  return consume(o.nc, {
    stream: webhookMessages.deliveryJob.stream(o.namespace),
    durable: deliveryDurable(o.namespace),
    schema: webhookMessages.deliveryJob.schema,
    // Jobs in flight; the calls they make share WEBHOOK_CONCURRENCY slots. An endpoint never has
    // more than WEBHOOK_ENDPOINT_CONCURRENCY attempts in flight (the dispatcher's bound), so a
    // hanging endpoint holds at most that many slots and the others keep theirs.
    concurrency: o.concurrency,
    ackWaitMs: o.ackWaitMs,
    log: o.log,
    health: o.health,
    async handle(job, meta) {
      // Its lease ran out: the dispatcher has counted these attempts and dispatched them again.
      if (new Date(job.lease_until) <= now()) return "ack";
      // A job waiting for call slots is still being worked on: keep JetStream from handing it to
      // another worker (which would call again) while its lease lasts.
      const keepAlive = setInterval(() => meta.working(), Math.max(1000, Math.floor(o.ackWaitMs / 3)));
      try {
        const started = await Promise.all(job.deliveries.map((ref) => starts.add(ref)));
        await Promise.all(
          job.deliveries.map((ref, i) => {
            const s = started[i];
            return s?.request ? attempt(ref, s.request, s.occurred_at) : undefined;
          }),
        );
      } finally {
        clearInterval(keepAlive);
      }
      return "ack";
    },
  });
}

/** At most `n` holders at once; the others wait in arrival order. */
function semaphore(n: number) {
  let free = n;
  const waiting: Array<() => void> = [];
  const release = () => {
    const next = waiting.shift();
    if (next) next();
    else free += 1;
  };
  return {
    acquire(): Promise<() => void> {
      if (free > 0) {
        free -= 1;
        return Promise.resolve(release);
      }
      return new Promise((resolve) => waiting.push(() => resolve(release)));
    },
  };
}
