import { randomUUID } from "node:crypto";
import {
  webhookAttemptsRpc,
  webhookMessages,
  type AttemptRef,
  type CallResult,
  type DeliveryJob,
  type ReportedAttempt,
  type SignedRequest,
  type StartAttempt,
  type StartedAttempt,
} from "@tasksvc/contracts";
import { createLogger } from "@tasksvc/logger";
import { client, connectNats, deleteStreams, encodeJson, ensureStream, jetstream, serve, type NatsConnection, type Served } from "@tasksvc/nats";
import { eventually } from "@tasksvc/testing";
import { webhookAttemptsDeferred, webhookDeliveryLag } from "@tasksvc/telemetry";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { DeliveryResources } from "../src/resources.js";
import { START_MARGIN_MS, startWorker, type WorkerOptions } from "../src/worker.js";

// The worker against a job stream of this file's own namespace (the stack's delivery service
// consumes only its own), with the webhooks service's two operations answered here over NATS.
const stack = inject("stack");
const namespace = `${stack.namespace}_worker_${randomUUID().slice(0, 8)}`;
const log = createLogger({ service: "worker-test", level: "silent" });

let nc: NatsConnection;
let served: Served;
/** What the webhooks side answers to startAttempts, and where recordAttempts' reports go. */
let started: { request: SignedRequest; occurred_at: string };
/** When set, answers a start in place of `started` (another worker's window, say). */
let startAnswer: ((ref: StartAttempt) => Partial<StartedAttempt> | undefined) | undefined;
let reported: (results: ReportedAttempt[]) => void = () => {};
/** Every attempt startAttempts was asked for, and every one deferAttempts gave back. */
const startedRefs: StartAttempt[] = [];
const deferredRefs: AttemptRef[] = [];

beforeAll(async () => {
  nc = await connectNats({ url: stack.natsUrl, name: "worker-test" });
  const job = webhookMessages.deliveryJob;
  await ensureStream(nc, { name: job.stream(namespace), subjects: [job.subject(namespace)], retention: "workqueue" });
  served = serve(
    nc,
    webhookAttemptsRpc,
    {
      startAttempts: async (i) => {
        startedRefs.push(...i.jobs);
        // Each request names its delivery in webhook-id, so a test knows which call is which.
        return {
          attempts: i.jobs.map((j) => ({ ...j, ...started, request: { ...started.request, headers: { "webhook-id": j.delivery_id } }, ...startAnswer?.(j) })),
        };
      },
      recordAttempts: async (i) => {
        reported(i.results);
        return { recorded: i.results.length };
      },
      deferAttempts: async (i) => {
        deferredRefs.push(...i.jobs);
        return { deferred: i.jobs.length };
      },
    },
    { namespace, log },
  );
});

afterAll(async () => {
  await served.drain();
  await deleteStreams(nc, `${namespace}_`);
  await nc.drain();
});

const lagSeconds = async () => {
  const values = (await webhookDeliveryLag.get()).values;
  const of = (name: string) => values.find((v) => v.metricName === name)?.value ?? 0;
  return { count: of("tasksvc_webhook_delivery_lag_seconds_count"), sum: of("tasksvc_webhook_delivery_lag_seconds_sum") };
};

describe("delivery worker", () => {
  it("when an attempt is delivered, then its lag is measured from the event time the webhooks service gave, and the body goes out as signed", async () => {
    // No timestamp in the body: the worker must not look for one there.
    const body = JSON.stringify({ type: "task.created", data: { id: "T-1" } });
    started = {
      request: { url: "https://hooks.example.com/x", headers: { "webhook-id": "evt_1" }, body },
      occurred_at: new Date(Date.now() - 60_000).toISOString(),
    };
    const sent: SignedRequest[] = [];
    const before = await lagSeconds();
    const worker = await startWorker(
      {
        log,
        webhooks: client(nc, webhookAttemptsRpc, { namespace, timeoutMs: 5000 }),
        send: async (request) => {
          sent.push(request);
          return { outcome: "delivered", status: 204, error_class: null, duration_ms: 1, retry_after_ms: null };
        },
        now: () => new Date(),
      },
      { nc, namespace, concurrency: 4, ackWaitMs: 30_000, callTimeoutMs: 15_000 },
    );
    try {
      const recorded = new Promise<ReportedAttempt[]>((resolve) => {
        reported = resolve;
      });
      const lease = new Date(Date.now() + 60_000).toISOString();
      await jetstream(nc).publish(
        webhookMessages.deliveryJob.subject(namespace),
        encodeJson({ endpoint_id: "whe_1", lease_until: lease, deliveries: [{ delivery_id: "whd_1", attempt: 1 }] }),
      );
      expect(await recorded).toEqual([
        expect.objectContaining({ delivery_id: "whd_1", attempt: 1, result: expect.objectContaining({ outcome: "delivered" }) }),
      ]);
    } finally {
      await worker.stop();
    }
    expect(sent.map((r) => r.body)).toEqual([body]);
    const after = await lagSeconds();
    expect(after.count - before.count).toBe(1);
    // From a minute ago: the event's time.
    expect(after.sum - before.sum).toBeGreaterThanOrEqual(60);
    expect(after.sum - before.sum).toBeLessThan(120);
  });
});

describe("delivery worker, another worker's window", () => {
  it("when start answers that another worker has the attempt in flight, then no call is made until its window has passed; the job comes back then and the attempt is made", async () => {
    started = { request: { url: "https://hooks.example.com/x", headers: {}, body: "{}" }, occurred_at: new Date().toISOString() };
    const sent: Array<{ id: string; at: number }> = [];
    const reports: ReportedAttempt[] = [];
    reported = (results) => void reports.push(...results);
    const d = `whd_${randomUUID().slice(0, 12)}`;
    const busyUntil = Date.now() + 1500;
    // The first start finds another worker's window open; a start after it has passed opens one.
    startAnswer = (ref) => (ref.delivery_id === d && Date.now() < busyUntil ? { request: null, busy_until: new Date(busyUntil).toISOString() } : undefined);
    const worker = await startWorker(
      {
        log,
        webhooks: client(nc, webhookAttemptsRpc, { namespace, timeoutMs: 5000 }),
        send: async (request) => {
          sent.push({ id: request.headers["webhook-id"] ?? "", at: Date.now() });
          return { outcome: "delivered", status: 204, error_class: null, duration_ms: 1, retry_after_ms: null };
        },
        now: () => new Date(),
      },
      { nc, namespace, concurrency: 4, ackWaitMs: 30_000, callTimeoutMs: 15_000 },
    );
    try {
      const lease = new Date(Date.now() + 60_000).toISOString();
      await jetstream(nc).publish(
        webhookMessages.deliveryJob.subject(namespace),
        encodeJson({ endpoint_id: "whe_busy", lease_until: lease, deliveries: [{ delivery_id: d, attempt: 1 }] }),
      );
      await eventually(() => reports.some((r) => r.delivery_id === d), { what: "the attempt made once the window passed", timeoutMs: 10_000 });
    } finally {
      startAnswer = undefined;
      await worker.stop();
    }
    expect(sent.filter((x) => x.id === d)).toHaveLength(1);
    expect(sent.find((x) => x.id === d)?.at).toBeGreaterThanOrEqual(busyUntil);
    // Each start asked for the call timeout and the start margin: the window it would hold.
    expect(startedRefs.filter((r) => r.delivery_id === d).map((r) => r.window_ms)).toEqual([15_000 + START_MARGIN_MS, 15_000 + START_MARGIN_MS]);
  });
});

// Rate-limited endpoints' attempts carry a send time (DESIGN.md 11): no earlier, and not later
// than its window after it; past the window the worker gives the attempt back unsent.
describe("delivery worker, send times", () => {
  const delivered: CallResult = { outcome: "delivered", status: 204, error_class: null, duration_ms: 1, retry_after_ms: null };
  const iso = (ms: number) => new Date(ms).toISOString();
  /** The worker's clock: real time plus `offset`, which a test moves forward instead of sleeping. */
  let offset = 0;
  const clock = () => new Date(Date.now() + offset);
  /** Every report, as it arrives. */
  let reports: ReportedAttempt[] = [];

  const worker = (o: Pick<DeliveryResources, "send"> & Partial<WorkerOptions>) => {
    offset = 0;
    reports = [];
    reported = (results) => void reports.push(...results);
    started = { request: { url: "https://hooks.example.com/x", headers: {}, body: "{}" }, occurred_at: new Date().toISOString() };
    const { send, ...settings } = o;
    return startWorker(
      { log, webhooks: client(nc, webhookAttemptsRpc, { namespace, timeoutMs: 5000 }), send, now: clock },
      { nc, namespace, concurrency: 4, ackWaitMs: 30_000, callTimeoutMs: 15_000, ...settings },
    );
  };
  const publish = (job: DeliveryJob) => jetstream(nc).publish(webhookMessages.deliveryJob.subject(namespace), encodeJson(job));
  const job = (deliveries: DeliveryJob["deliveries"], window?: number): DeliveryJob => ({
    endpoint_id: `whe_${randomUUID().slice(0, 8)}`,
    lease_until: iso(Date.now() + 3600_000),
    deliveries,
    ...(window === undefined ? {} : { send_window_ms: window }),
  });
  const id = () => `whd_${randomUUID().slice(0, 12)}`;
  const deferredCount = async (stage: "arrival" | "call") => (await webhookAttemptsDeferred.get()).values.find((v) => v.labels["stage"] === stage)?.value ?? 0;

  it("when a job carries send times, then each attempt starts at its own or after it, within the window, and reports when it started", async () => {
    const sent: Array<{ id: string; at: number }> = [];
    const w = await worker({
      send: async (r) => {
        sent.push({ id: r.headers["webhook-id"] ?? "", at: clock().getTime() });
        return delivered;
      },
    });
    try {
      const [a, b] = [id(), id()];
      const now = Date.now();
      // A wide window: this test is about "not before"; lateness has tests of its own.
      const sendAt = { [a]: now + 300, [b]: now + 600 };
      await publish(
        job(
          [
            { delivery_id: a, attempt: 1, send_at: iso(now + 300) },
            { delivery_id: b, attempt: 1, send_at: iso(now + 600) },
          ],
          10_000,
        ),
      );
      await eventually(() => reports.length === 2, { what: "both reports" });
      for (const r of reports) {
        const at = Date.parse(r.attempted_at);
        expect(at, JSON.stringify(r)).toBeGreaterThanOrEqual(sendAt[r.delivery_id] ?? Number.NaN);
        expect(at, JSON.stringify(r)).toBeLessThan((sendAt[r.delivery_id] ?? Number.NaN) + 10_000);
      }
      expect(sent.map((x) => x.id)).toEqual([a, b]);
      expect(sent.every((x) => x.at >= (sendAt[x.id] ?? Number.NaN))).toBe(true);
    } finally {
      await w.stop();
    }
  });

  it("when a job arrives past an attempt's window, then that attempt is deferred, unsigned and unsent, and counted; the job's others are made", async () => {
    const sent: string[] = [];
    const w = await worker({
      send: async (r) => {
        sent.push(r.headers["webhook-id"] ?? "");
        return delivered;
      },
    });
    try {
      const [late, onTime] = [id(), id()];
      const before = await deferredCount("arrival");
      const now = Date.now();
      await publish(
        job(
          [
            { delivery_id: late, attempt: 3, send_at: iso(now - 20_000) },
            { delivery_id: onTime, attempt: 1, send_at: iso(now) },
          ],
          10_000,
        ),
      );
      await eventually(() => reports.length === 1 && deferredRefs.some((d) => d.delivery_id === late), { what: "one report and one deferral" });
      expect(deferredRefs.filter((d) => d.delivery_id === late)).toEqual([{ delivery_id: late, attempt: 3 }]);
      expect(startedRefs.some((d) => d.delivery_id === late)).toBe(false);
      expect(sent).toEqual([onTime]);
      expect(reports.map((r) => r.delivery_id)).toEqual([onTime]);
      expect((await deferredCount("arrival")) - before).toBe(1);
    } finally {
      await w.stop();
    }
  });

  it("when an attempt gets its call slot only past its window (a busy worker), then it is deferred, not made", async () => {
    const sent: string[] = [];
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    // One call slot, which the first attempt keeps until the test lets go.
    const w = await worker({
      concurrency: 1,
      send: async (r) => {
        sent.push(r.headers["webhook-id"] ?? "");
        await held;
        return delivered;
      },
    });
    try {
      const [first, second] = [id(), id()];
      const before = await deferredCount("call");
      const now = Date.now();
      await publish(
        job(
          [
            { delivery_id: first, attempt: 1, send_at: iso(now) },
            { delivery_id: second, attempt: 1, send_at: iso(now + 50) },
          ],
          10_000,
        ),
      );
      await eventually(() => sent.length === 1, { what: "the first call" });
      // The worker's clock passes the second attempt's window while the first call holds the slot.
      offset = 60_000;
      release();
      await eventually(() => deferredRefs.some((d) => d.delivery_id === second), { what: "the second attempt deferred" });
      await eventually(() => reports.length === 1, { what: "the first attempt's report" });
      expect(sent).toEqual([first]);
      expect(reports.map((r) => r.delivery_id)).toEqual([first]);
      expect((await deferredCount("call")) - before).toBe(1);
    } finally {
      release();
      await w.stop();
    }
  });

  it("when an attempt waits for its send time, then it holds no call slot: another endpoint's job makes as many calls at once as there are slots", async () => {
    const inFlight = new Set<string>();
    let most = 0;
    const sent: string[] = [];
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const w = await worker({
      concurrency: 2,
      send: async (r) => {
        const d = r.headers["webhook-id"] ?? "";
        sent.push(d);
        inFlight.add(d);
        most = Math.max(most, inFlight.size);
        await held;
        inFlight.delete(d);
        return delivered;
      },
    });
    try {
      const waiting = id();
      // Its send time is a minute ahead on the worker's clock: it waits until the test moves the clock.
      const sendAt = Date.now() + 60_000;
      await publish(job([{ delivery_id: waiting, attempt: 1, send_at: iso(sendAt) }], 10_000));
      await eventually(() => startedRefs.some((d) => d.delivery_id === waiting), { what: "the limited attempt started (signed) and waiting" });
      const [x, y] = [id(), id()];
      await publish(
        job([
          { delivery_id: x, attempt: 1 },
          { delivery_id: y, attempt: 1 },
        ]),
      );
      // Both slots are free for the unlimited job's two calls while the limited attempt waits.
      await eventually(() => inFlight.size === 2, { what: "two calls in flight at once" });
      expect([...inFlight].sort()).toEqual([x, y].sort());
      expect(sent).not.toContain(waiting);
      release();
      await eventually(() => reports.length === 2, { what: "the two reports" });
      offset = 60_000;
      await eventually(() => reports.length === 3, { what: "the limited attempt, once its send time came" });
      expect(sent.at(-1)).toBe(waiting);
      expect(most).toBe(2);
      const limited = reports.find((r) => r.delivery_id === waiting);
      expect(Date.parse(limited?.attempted_at ?? "")).toBeGreaterThanOrEqual(sendAt);
    } finally {
      release();
      // A failed run still lets the waiting attempt go, so that stop() does not wait a minute.
      offset = 60_000;
      await w.stop();
    }
  });
});
