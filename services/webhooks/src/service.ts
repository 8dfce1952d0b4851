import { sampled } from "@tasksvc/telemetry";
import { fileURLToPath } from "node:url";
import { serviceSettings, settings } from "@tasksvc/config";
import { type EndpointEventType, deliveryRpc, webhookAttemptsRpc, webhookMessages, webhooksRpc } from "@tasksvc/contracts";
import { startAuditRelay, startOutboxRelay, type OutboxRow } from "@tasksvc/db";
import { auditStreamSpec, jetstream, nanos, outboxPublisher } from "@tasksvc/nats";
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

const STATS_COMPACTION_MS = 5_000;

export const service = defineService({
  name: "webhooks",
  schema: "webhooks",
  migrations: MIGRATIONS_DIR,
  config: WebhooksConfig,
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
      // A week covers a long tasks outage.
      name: webhookMessages.endpointEvent.stream(namespace),
      subjects: [webhookMessages.endpointEvent.subjects(namespace)],
      max_age: nanos(7 * 24 * 3600_000),
      duplicate_window: nanos(3600_000),
    },
    auditStreamSpec(namespace),
  ],
  async start({ cfg, db, nc, namespace, serve, client, every, onStop, log, health }) {
    if (cfg.WEBHOOK_SECRET_KEY.isDevKey) {
      log.warn("WEBHOOK_SECRET_KEY is not set: signing secrets are sealed with the public development key; set it outside development");
    }
    const delivery = client(deliveryRpc, { timeoutMs: cfg.RPC_TIMEOUT_MS });
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
    const auditRelay = startAuditRelay({
      db,
      publisher: outboxPublisher(jetstream(nc)),
      service: "webhooks",
      namespace,
      log,
      maxPayload: () => nc.info?.max_payload,
    });
    onStop(() => auditRelay.stop());
    const res = webhooksResources(db, {
      audited: () => auditRelay.notify(),
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
    const deliveries = deliveriesRepo(db.sql);
    const stats = deliveryStatsService(res);
    every(60 * 60_000, "delivery log sweep", async () => {
      await deliveries.sweep();
      await deliveries.sweepBodies();
      await stats.sweep();
    });
    // Reads add what is left, so this only bounds the deltas a read sums.
    every(STATS_COMPACTION_MS, "delivery stats compaction", () => stats.compact());

    const attempts = attemptsService(res);
    const dispatch = dispatchService(res, {
      leaseMs: cfg.WEBHOOK_LEASE,
      endpointConcurrency: cfg.WEBHOOK_ENDPOINT_CONCURRENCY,
      publish: jobPublisher(nc, namespace),
    });
    const dispatcher = startDispatcher({ dispatch, log });
    onStop(() => dispatcher.stop());
    const removeLive = sampled.webhookDeliveries(async () => {
      const b = await deliveries.backlog();
      return [
        { labels: { state: "pending_due" }, value: b.due },
        { labels: { state: "pending_later" }, value: b.later },
        { labels: { state: "delivering" }, value: b.delivering },
      ];
    });
    onStop(removeLive);

    // Stopped after serving stops (reverse order), before NATS drains and the pool ends.
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
