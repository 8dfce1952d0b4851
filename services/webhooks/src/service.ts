import { sampled } from "@tasksvc/telemetry";
import { fileURLToPath } from "node:url";
import { serviceSettings, settings } from "@tasksvc/config";
import { type EndpointEventType, deliveryRpc, webhookAttemptsRpc, webhookMessages, webhooksRpc } from "@tasksvc/contracts";
import { startOutboxRelay, type OutboxRow } from "@tasksvc/db";
import { jetstream, nanos, outboxPublisher } from "@tasksvc/nats";
import { webhookSettings } from "@tasksvc/outbound";
import { secretBox } from "@tasksvc/secrets";
import { defineService } from "@tasksvc/runtime";
import { z } from "zod";
import { startTaskEventsConsumer } from "./consumers/task-events.js";
import { attemptsService } from "./domain/attempts.js";
import { deliveryLogService } from "./domain/delivery-log.js";
import { deliveryStatsService } from "./domain/delivery-stats.js";
import { jobPublisher, startDispatcher } from "./dispatcher.js";
import { dispatchService } from "./domain/dispatch.js";
import { endpointsService } from "./domain/endpoints-service.js";
import { fanOutService } from "./domain/fanout.js";
import { webhooksResources } from "./domain/resources.js";
import { deliveriesRepo } from "./repo/deliveries-repo.js";
import { endpointsRepo } from "./repo/endpoints-repo.js";
import { attemptsHandlers, webhooksHandlers } from "./rpc.js";

export const WebhooksConfig = z
  .object({
    ...serviceSettings,
    RPC_TIMEOUT_MS: settings.RPC_TIMEOUT_MS,
    WEBHOOK_SECRET_KEY: webhookSettings.WEBHOOK_SECRET_KEY,
    WEBHOOK_ALLOW_HTTP: webhookSettings.WEBHOOK_ALLOW_HTTP,
    WEBHOOK_RETRY_DELAYS: webhookSettings.WEBHOOK_RETRY_DELAYS,
    WEBHOOK_DISABLE_AFTER: webhookSettings.WEBHOOK_DISABLE_AFTER,
    WEBHOOK_DISABLE_MIN_AGE: webhookSettings.WEBHOOK_DISABLE_MIN_AGE,
    WEBHOOK_TIMEOUT_MS: webhookSettings.WEBHOOK_TIMEOUT_MS,
    WEBHOOK_LEASE: webhookSettings.WEBHOOK_LEASE,
    WEBHOOK_ENDPOINT_CONCURRENCY: webhookSettings.WEBHOOK_ENDPOINT_CONCURRENCY,
  })
  .refine((c) => c.WEBHOOK_LEASE >= c.WEBHOOK_TIMEOUT_MS + 1000, {
    path: ["WEBHOOK_LEASE"],
    message: "must exceed WEBHOOK_TIMEOUT_MS by at least 1s (an attempt must be able to finish within its lease)",
  });
export type WebhooksConfig = z.output<typeof WebhooksConfig>;

export const MIGRATIONS_DIR = fileURLToPath(new URL("../migrations", import.meta.url));

/** How often the delivery statistics' deltas are folded into the rollup. */
const STATS_COMPACTION_MS = 5_000;

/** The webhooks service: organizations' webhook endpoints, their signing secrets, and deliveries (issue 11). */
export const service = defineService({
  name: "webhooks",
  schema: "webhooks",
  migrations: MIGRATIONS_DIR,
  config: WebhooksConfig,
  // The delivery jobs this service dispatches and the delivery service consumes (decision 0015).
  // Work-queue retention: a job is gone once acknowledged; Postgres keeps the truth of every delivery.
  streams: (namespace) => [
    {
      name: webhookMessages.deliveryJob.stream(namespace),
      subjects: [webhookMessages.deliveryJob.subject(namespace)],
      retention: "workqueue",
      max_age: nanos(24 * 3600_000),
      duplicate_window: nanos(10 * 60_000),
    },
    {
      // Endpoints' operational events on their way to the events outbox (the tasks service takes
      // them in within moments); a week covers a long tasks outage.
      name: webhookMessages.endpointEvent.stream(namespace),
      subjects: [webhookMessages.endpointEvent.subjects(namespace)],
      max_age: nanos(7 * 24 * 3600_000),
      duplicate_window: nanos(3600_000),
    },
  ],
  async start({ cfg, db, nc, namespace, serve, client, every, onStop, log, health }) {
    if (cfg.WEBHOOK_SECRET_KEY.isDevKey) {
      log.warn("WEBHOOK_SECRET_KEY is not set: signing secrets are sealed with the public development key; set it outside development");
    }
    const delivery = client(deliveryRpc, { timeoutMs: cfg.RPC_TIMEOUT_MS });
    // The outbox of endpoints' operational events, relayed to their stream (Nats-Msg-Id = event id).
    const relay = startOutboxRelay<OutboxRow & { type: EndpointEventType }>({
      db,
      publisher: outboxPublisher(jetstream(nc)),
      table: "outbox",
      lock: "webhooks.outbox.relay",
      subject: (row) => webhookMessages.endpointEvent.subject(namespace, row.type),
      log,
      // A row the server would refuse for its size is set aside at once, never retried.
      maxPayload: () => nc.info?.max_payload,
    });
    onStop(() => relay.stop());
    // One set of resources for every system. Writes of operational events wake the relay; a
    // finished attempt frees a slot of its endpoint and may have scheduled an immediate retry, and
    // a replay's new rows and a retry's are due at once: each wakes the dispatcher rather than
    // waiting for its poll.
    const res = webhooksResources(db, {
      box: secretBox(cfg.WEBHOOK_SECRET_KEY.keyMaterial, "WEBHOOK_SECRET_KEY"),
      policy: { retryDelays: cfg.WEBHOOK_RETRY_DELAYS, disableAfter: cfg.WEBHOOK_DISABLE_AFTER, disableMinAgeMs: cfg.WEBHOOK_DISABLE_MIN_AGE },
      log,
      written: () => relay.notify(),
      wake: () => dispatcher.wake(),
    });
    const svc = endpointsService(res, {
      allowHttp: cfg.WEBHOOK_ALLOW_HTTP,
      call: (request, ctx) => delivery.call("call", request, ctx),
      checkDestination: (url, ctx) => delivery.call("checkDestination", { url }, ctx),
    });
    every(60 * 60_000, "idempotency sweep", () => endpointsRepo(db.sql).idempotency.sweep());
    // The delivery log keeps 30 days, as the events feed does; attempts go with their delivery,
    // and an event's body with the last delivery of it.
    const deliveries = deliveriesRepo(db.sql);
    const stats = deliveryStatsService(res);
    every(60 * 60_000, "delivery log sweep", async () => {
      await deliveries.sweep();
      await deliveries.sweepBodies();
      await stats.sweep();
    });
    // The statistics' deltas into their rollup: reads add what is left, so this only bounds the
    // deltas a read sums (a few seconds' worth).
    every(STATS_COMPACTION_MS, "delivery stats compaction", () => stats.compact());

    const attempts = attemptsService(res);
    // Due deliveries → jobs on the job stream, at most WEBHOOK_ENDPOINT_CONCURRENCY in flight per
    // endpoint; leases that ran out are counted and dispatched again.
    const dispatch = dispatchService(res, {
      leaseMs: cfg.WEBHOOK_LEASE,
      endpointConcurrency: cfg.WEBHOOK_ENDPOINT_CONCURRENCY,
      publish: jobPublisher(nc, namespace),
    });
    const dispatcher = startDispatcher({ dispatch, log });
    onStop(() => dispatcher.stop());
    // Scrape-time backlog of deliveries.
    const removeLive = sampled.webhookDeliveries(async () => {
      const b = await deliveries.backlog();
      return [
        { labels: { state: "pending_due" }, value: b.due },
        { labels: { state: "pending_later" }, value: b.later },
        { labels: { state: "delivering" }, value: b.delivering },
      ];
    });
    onStop(removeLive);

    // Task events → deliveries (fan-out), then a wake for the dispatcher. Stopped after serving
    // stops (reverse order), before NATS drains and the pool ends.
    const fanout = await startTaskEventsConsumer({
      nc,
      namespace,
      log,
      fanout: fanOutService(res),
      health,
      onFannedOut: () => res.wake(),
    });
    onStop(() => fanout.stop());
    serve(webhookAttemptsRpc, attemptsHandlers(attempts));
    const deliveryLog = deliveryLogService(res);
    serve(webhooksRpc, webhooksHandlers(svc, deliveryLog, stats));
  },
});
