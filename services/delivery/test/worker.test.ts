import { randomUUID } from "node:crypto";
import { webhookAttemptsRpc, webhookMessages, type ReportedAttempt, type SignedRequest } from "@tasksvc/contracts";
import { createLogger } from "@tasksvc/logger";
import { client, connectNats, deleteStreams, encodeJson, ensureStream, jetstream, serve, type NatsConnection, type Served } from "@tasksvc/nats";
import { webhookDeliveryLag } from "@tasksvc/telemetry";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startWorker } from "../src/worker.js";

// The worker against a job stream of this file's own namespace (the stack's delivery service
// consumes only its own), with the webhooks service's two operations answered here over NATS.
const stack = inject("stack");
const namespace = `${stack.namespace}_worker_${randomUUID().slice(0, 8)}`;
const log = createLogger({ service: "worker-test", level: "silent" });

let nc: NatsConnection;
let served: Served;
/** What the webhooks side answers to startAttempts, and where recordAttempts' reports go. */
let started: { request: SignedRequest; occurred_at: string };
let reported: (results: ReportedAttempt[]) => void = () => {};

beforeAll(async () => {
  nc = await connectNats({ url: stack.natsUrl, name: "worker-test" });
  const job = webhookMessages.deliveryJob;
  await ensureStream(nc, { name: job.stream(namespace), subjects: [job.subject(namespace)], retention: "workqueue" });
  served = serve(
    nc,
    webhookAttemptsRpc,
    {
      startAttempts: async (i) => ({ attempts: i.jobs.map((j) => ({ ...j, ...started })) }),
      recordAttempts: async (i) => {
        reported(i.results);
        return { recorded: i.results.length };
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
    const worker = await startWorker({
      nc,
      namespace,
      log,
      webhooks: client(nc, webhookAttemptsRpc, { namespace, timeoutMs: 5000 }),
      send: async (request) => {
        sent.push(request);
        return { outcome: "delivered", status: 204, error_class: null, duration_ms: 1, retry_after_ms: null };
      },
      concurrency: 4,
      ackWaitMs: 30_000,
    });
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
