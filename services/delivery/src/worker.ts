import {
  systemContext,
  webhookMessages,
  type AttemptRef,
  type CallResult,
  type JobAttempt,
  type ReportedAttempt,
  type RpcContext,
  type SignedRequest,
  type StartAttempt,
  type StartedAttempt,
} from "@tasksvc/contracts";
import { consume, type Consumption, type NatsConnection } from "@tasksvc/nats";
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
import type { DeliveryResources } from "./resources.js";

/** The worker's settings and the connection it consumes on. */
export interface WorkerOptions {
  nc: NatsConnection;
  namespace: string;
  /** WEBHOOK_CONCURRENCY: calls in flight in this process. */
  concurrency: number;
  /**
   * How long a job may go without news from this worker before JetStream hands it to another
   * (JOB_ACK_WAIT_MS in service): the handler reports progress every third of it while it holds
   * the job, so it only has to cover a pause in those reports, and a dead worker's jobs come back
   * within it.
   */
  ackWaitMs: number;
  /** WEBHOOK_TIMEOUT_MS: the longest one call may take (`send` ends it then). */
  callTimeoutMs: number;
  /** The replica's health: the consumer reports whether it is attached. */
  health?: { check(name: string, fn: Check): () => void };
}

/** Durable names may not contain dots: the namespace joins with `_`. Replicas share it. */
export const deliveryDurable = (namespace: string) => `${namespace}_delivery`;

/**
 * A dead worker's jobs come back to another worker within this long (its in-progress reports
 * stop). Short, because a live worker keeps its jobs by those reports, every third of it.
 */
export const JOB_ACK_WAIT_MS = 10_000;

/**
 * How long a start's answer may take before its call is given up (the attempt handed back
 * unsent): a start opens the attempt's call window for the call timeout plus this, so a call
 * begun later could outlast its window. TIMER_SLACK_MS of it covers timers that fire late.
 */
export const START_MARGIN_MS = 5000;
const TIMER_SLACK_MS = 1000;
/** The least wait before a job with a busy attempt comes back (its window about to pass). */
const BUSY_NAK_MIN_MS = 100;

/** The context of the worker's internal calls: no organization, no caller. */
const systemCtx = (): RpcContext => systemContext(`delivery-${Date.now().toString(36)}`);

/** A rate-limited endpoint's attempt: started at `at` or later, but before `at + windowMs` (epoch ms), or not at all. */
interface SendWindow {
  at: number;
  windowMs: number;
}

/**
 * The delivery worker (decision 0015): takes jobs from the job stream, asks the webhooks service
 * for each attempt's signed request (none when the delivery was deleted, its endpoint disabled,
 * or the attempt already dispatched again), makes the call, reports the outcome, then acks.
 * Starts and reports are batched: one request for many attempts.
 *
 * Starting an attempt opens its call window (the call timeout plus START_MARGIN_MS, a limited
 * attempt's wait for its send time on top): no other worker may start it meanwhile, and this one
 * begins its call within the window's margin or not at all. So a job that JetStream hands to a
 * second worker (the first went silent) never makes a second call at once: the second is told
 * the attempt is busy and asks again (nak) once the window has passed, when the first worker's
 * call has surely ended; if that worker died, the attempt is then made again, not lost.
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
export function startWorker(res: DeliveryResources, o: WorkerOptions): Promise<Consumption> {
  const { now } = res;
  const starts = batcher<StartAttempt, StartedAttempt>(async (jobs) => (await res.webhooks.call("startAttempts", { jobs }, systemCtx())).attempts, {
    maxSize: 200,
    maxWaitMs: 2,
  });
  const records = batcher(
    async (results: ReportedAttempt[]) => {
      await res.webhooks.call("recordAttempts", { results }, systemCtx());
      return results.map(() => true);
    },
    { maxSize: 200, maxWaitMs: 10 },
  );

  const defers = batcher(
    async (jobs: AttemptRef[]) => {
      await res.webhooks.call("deferAttempts", { jobs }, systemCtx());
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
  async function defer(ref: AttemptRef, stage: "arrival" | "call" | "start"): Promise<void> {
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
   * One attempt: started (its window opened and its request signed), then the call, then its
   * report (batched with others'). An attempt with a send time is started on arrival, then waits
   * for its time without a call slot (so a limited endpoint's waits never take slots from the
   * others), and is deferred instead of made if it gets its slot past its send window. Any other
   * is started once it holds a slot, so that its window runs from then. Answers when to ask again
   * if another worker's window was open on it (epoch ms), else nothing.
   */
  async function attempt(ref: AttemptRef, window: SendWindow | undefined): Promise<number | undefined> {
    const busyUntil = (s: StartedAttempt) => (s.busy_until === undefined ? undefined : Date.parse(s.busy_until));
    let started: StartedAttempt;
    let release: () => void;
    if (window) {
      const latest = window.at + window.windowMs;
      started = await starts.add({ ...ref, window_ms: Math.max(0, latest - now().getTime()) + o.callTimeoutMs + START_MARGIN_MS });
      if (!started.request) return busyUntil(started);
      await waitUntil(window.at);
      release = await slots.acquire();
      if (now().getTime() >= latest) {
        release();
        await defer(ref, "call");
        return undefined;
      }
    } else {
      release = await slots.acquire();
      const asked = performance.now();
      try {
        started = await starts.add({ ...ref, window_ms: o.callTimeoutMs + START_MARGIN_MS });
      } catch (err) {
        release();
        throw err;
      }
      if (!started.request) {
        release();
        return busyUntil(started);
      }
      // An answer this late leaves too little of the window for a whole call: given back unsent.
      if (performance.now() - asked > START_MARGIN_MS - TIMER_SLACK_MS) {
        release();
        await defer(ref, "start");
        return undefined;
      }
    }
    const request: SignedRequest = started.request;
    const occurredAt = started.occurred_at;
    const at = now();
    let result: CallResult;
    const attemptedAt = at.toISOString();
    const callStarted = performance.now();
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
                const r = await res.send(request);
                span.setAttributes({ "tasksvc.outcome": r.outcome, ...(r.status === null ? {} : { "http.response.status_code": r.status }) });
                return r;
              },
            )
          : await res.send(request);
    } finally {
      webhookAttemptDuration.observe((performance.now() - callStarted) / 1000);
      release();
    }
    webhookAttempts.inc({ outcome: result.outcome });
    // End to end, from the change (the event's own time, as the webhooks service gave it).
    if (result.outcome === "delivered" && occurredAt !== undefined) webhookDeliveryLag.observe(Math.max(0, Date.now() - Date.parse(occurredAt)) / 1000);
    await records.add({ ...ref, attempted_at: attemptedAt, result });
    return undefined;
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
    log: res.log,
    health: o.health,
    async handle(job, meta) {
      // Its lease ran out: the dispatcher has counted these attempts and dispatched them again.
      if (new Date(job.lease_until) <= now()) return "ack";
      // While this worker lives, the job stays here however long it waits for slots or calls:
      // JetStream hands it to another worker only once these reports stop (a dead worker).
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
        const settled = await Promise.allSettled([...late.map((a) => defer(refOf(a), "arrival")), ...due.map((a) => attempt(refOf(a), windowOf(a)))]);
        // Answered only once every attempt of the job is done: a nak while some were still waiting
        // or calling would bring the job back to a worker that starts them a second time.
        const failed = settled.find((r) => r.status === "rejected");
        if (failed) throw failed.reason;
        // Attempts another worker had started (this job reached it too): back once their windows
        // have passed, to be made again if that worker never reported them.
        const busy = settled.reduce((m, r) => (r.status === "fulfilled" && typeof r.value === "number" ? Math.max(m, r.value) : m), 0);
        if (busy > 0) return { nak: Math.max(BUSY_NAK_MIN_MS, busy - now().getTime()) };
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
