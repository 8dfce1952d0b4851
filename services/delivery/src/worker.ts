import {
  systemContext,
  webhookMessages,
  type AttemptRef,
  type CallResult,
  type JobAttempt,
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
  webhookAttemptsDeferred,
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

/** A rate-limited endpoint's attempt: started at `at` or later, but before `at + windowMs` (epoch ms), or not at all. */
interface SendWindow {
  at: number;
  windowMs: number;
}

/**
 * The delivery worker (decision 0015): takes jobs from the job stream, asks the webhooks service
 * for each one's signed request (none when the delivery was deleted, its endpoint disabled, or
 * the attempt already dispatched again), makes the call, reports the outcome, then acks.
 * Starts and reports are batched: one request for many jobs.
 *
 * A job is acked only once its outcome is recorded. If the report fails, the job comes back
 * (nak with backoff) and is started again, which answers nothing to send once the lease has run
 * out and the dispatcher counted the attempt: at least once, never lost.
 *
 * A rate-limited endpoint's attempts carry send times (DESIGN.md 11): each starts at its time or
 * within the job's window after it, by this worker's clock, or is handed back unsent
 * (deferAttempts). That window is what keeps every one-second window within the limit across
 * all workers, so hosts' clocks must agree (NTP) to well within it.
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

  const defers = batcher(
    async (jobs: AttemptRef[]) => {
      await o.webhooks.call("deferAttempts", { jobs }, systemCtx());
      return jobs.map(() => true);
    },
    { maxSize: 200, maxWaitMs: 10 },
  );

  const slots = semaphore(o.concurrency);

  /**
   * Gives an attempt back unsent: it was reached past its send window, and starting it now could
   * put more than the endpoint's rate limit into one second. The webhooks service makes it PENDING
   * again with a new send time to come; nothing is counted against the delivery.
   */
  async function defer(ref: AttemptRef, stage: "arrival" | "call"): Promise<void> {
    webhookAttemptsDeferred.inc({ stage });
    await defers.add(ref);
  }

  /**
   * Until this worker's clock reads `at`, holding nothing but a timer (the job's keep-alive runs
   * meanwhile). In steps of a second at most, so that a clock stepped forward is followed.
   */
  async function waitUntil(at: number): Promise<void> {
    for (let left = at - now().getTime(); left > 0; left = at - now().getTime()) {
      await new Promise((resolve) => setTimeout(resolve, Math.min(left, 1000)));
    }
  }

  /**
   * One attempt: its send time if it has one (waited for without a call slot, so a limited
   * endpoint's waits never take slots from the others), a slot, the call, then its report
   * (batched with others'). Reached past its window, it is deferred instead of made.
   */
  async function attempt(ref: AttemptRef, request: SignedRequest, occurredAt: string | undefined, window: SendWindow | undefined): Promise<void> {
    if (window) await waitUntil(window.at);
    const release = await slots.acquire();
    const at = now();
    if (window && at.getTime() >= window.at + window.windowMs) {
      release();
      await defer(ref, "call");
      return;
    }
    let result: CallResult;
    const attemptedAt = at.toISOString();
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
    // hanging endpoint holds at most that many slots and the others keep theirs. A job waiting
    // for send times holds one of these (never a call slot), within the same bound; a refill
    // is about half a second of send times in one job, so a limited endpoint whose own
    // concurrency is not the limit keeps two or three here.
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
        const arrived = now().getTime();
        const windowMs = job.send_window_ms ?? 0;
        const windowOf = (a: JobAttempt): SendWindow | undefined => (a.send_at === undefined ? undefined : { at: Date.parse(a.send_at), windowMs });
        const refOf = (a: JobAttempt): AttemptRef => ({ delivery_id: a.delivery_id, attempt: a.attempt });
        // Past its window already (a job that waited, a worker that stalled): given back unsigned.
        const isLate = (a: JobAttempt) => {
          const w = windowOf(a);
          return w !== undefined && arrived >= w.at + w.windowMs;
        };
        const late = job.deliveries.filter(isLate);
        const due = job.deliveries.filter((a) => !isLate(a));
        const started = await Promise.all(due.map((a) => starts.add(refOf(a))));
        const settled = await Promise.allSettled([
          ...late.map((a) => defer(refOf(a), "arrival")),
          ...due.map((a, i) => {
            const s = started[i];
            return s?.request ? attempt(refOf(a), s.request, s.occurred_at, windowOf(a)) : undefined;
          }),
        ]);
        // Answered only once every attempt of the job is done: a nak while some were still waiting
        // or calling would bring the job back to a worker that starts them a second time.
        const failed = settled.find((r) => r.status === "rejected");
        if (failed) throw failed.reason;
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
