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

export interface WorkerOptions {
  nc: NatsConnection;
  namespace: string;
  concurrency: number;
  ackWaitMs: number;
  callTimeoutMs: number;
  health?: { check(name: string, fn: Check): () => void };
}

/** Durable names may not contain dots: the namespace joins with `_`. */
export const deliveryDurable = (namespace: string) => `${namespace}_delivery`;

/** A dead worker's jobs come back within this; short, because a live worker keeps its own by reporting progress every third of it. */
export const JOB_ACK_WAIT_MS = 10_000;

/** A start opens the call window for the call timeout plus this, so a start answered later is given up; TIMER_SLACK_MS covers late timers. */
export const START_MARGIN_MS = 5000;
const TIMER_SLACK_MS = 1000;
const BUSY_NAK_MIN_MS = 100;

const systemCtx = (): RpcContext => systemContext(`delivery-${Date.now().toString(36)}`);

interface SendWindow {
  at: number;
  windowMs: number;
}

/**
 * A start opens the attempt's call window, so a second worker given the job never calls at once
 * (decision 0033); acked only once the outcome is recorded. Send windows hold an endpoint's rate
 * across workers only while hosts' clocks agree (NTP, decision 0028).
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

  /** Starting it now could put more than the endpoint's rate limit into one second (decision 0028). */
  async function defer(ref: AttemptRef, stage: "arrival" | "call" | "start"): Promise<void> {
    webhookAttemptsDeferred.inc({ stage });
    await defers.add(ref);
  }

  /** In steps of a second at most, so that a clock stepped forward is followed. */
  async function waitUntil(at: number): Promise<void> {
    for (let left = at - now().getTime(); left > 0; left = at - now().getTime()) {
      await new Promise((resolve) => setTimeout(resolve, Math.min(left, 1000)));
    }
  }

  /** A send time is awaited without a call slot, so a limited endpoint takes no slots from the others; any other attempt starts once it holds one. */
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
    // At most WEBHOOK_ENDPOINT_CONCURRENCY attempts per endpoint are in flight, so a hanging endpoint holds at most that many slots.
    concurrency: o.concurrency,
    ackWaitMs: o.ackWaitMs,
    log: res.log,
    health: o.health,
    async handle(job, meta) {
      // Its lease ran out: the dispatcher has counted these attempts and dispatched them again.
      if (new Date(job.lease_until) <= now()) return "ack";
      // JetStream hands the job to another worker only once these reports stop (a dead worker).
      const keepAlive = setInterval(() => meta.working(), Math.max(1000, Math.floor(o.ackWaitMs / 3)));
      try {
        const arrived = now().getTime();
        const windowMs = job.send_window_ms ?? 0;
        const windowOf = (a: JobAttempt): SendWindow | undefined => (a.send_at === undefined ? undefined : { at: Date.parse(a.send_at), windowMs });
        const refOf = (a: JobAttempt): AttemptRef => ({ delivery_id: a.delivery_id, attempt: a.attempt });
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
        // Another worker had started these: back once its windows have passed, to be made again if it never reported.
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
