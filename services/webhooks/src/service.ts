import { fileURLToPath } from "node:url";
import { serviceSettings, settings } from "@tasksvc/config";
import { webhooksRpc } from "@tasksvc/contracts";
import { secretBox, webhookSecretKey } from "@tasksvc/outbound";
import { defineService } from "@tasksvc/runtime";
import { z } from "zod";
import { endpointsService } from "./domain/endpoints-service.js";
import { endpointsRepo } from "./repo/endpoints-repo.js";
import { startTaskEventsConsumer } from "./consumers/task-events.js";
import { fanOutService } from "./domain/fanout.js";
import { deliveriesRepo } from "./repo/deliveries-repo.js";
import { webhooksHandlers } from "./rpc.js";

export const WebhooksConfig = z.object({
  ...serviceSettings,
  WEBHOOK_SECRET_KEY: webhookSecretKey,
  WEBHOOK_ALLOW_HTTP: settings.bool(false),
});
export type WebhooksConfig = z.output<typeof WebhooksConfig>;

export const MIGRATIONS_DIR = fileURLToPath(new URL("../migrations", import.meta.url));

/** The webhooks service: organizations' webhook endpoints, their signing secrets, and deliveries (issue 11). */
export const service = defineService({
  name: "webhooks",
  schema: "webhooks",
  migrations: MIGRATIONS_DIR,
  config: WebhooksConfig,
  async start({ cfg, db, nc, namespace, serve, every, onStop, log }) {
    if (cfg.WEBHOOK_SECRET_KEY.isDevKey) {
      log.warn("WEBHOOK_SECRET_KEY is not set: signing secrets are sealed with the public development key; set it outside development");
    }
    const repo = endpointsRepo(db.sql);
    const svc = endpointsService({
      repo,
      tx: (fn) => db.tx((t) => fn(endpointsRepo(t))),
      box: secretBox(cfg.WEBHOOK_SECRET_KEY.keyMaterial),
      allowHttp: cfg.WEBHOOK_ALLOW_HTTP,
    });
    every(60 * 60_000, "idempotency sweep", () => repo.idempotency.sweep());
    // Task events → deliveries (issue 11, fan-out). Stopped after serving stops (reverse order),
    // before NATS drains and the pool ends.
    const fanout = await startTaskEventsConsumer({ nc, namespace, log, fanout: fanOutService({ repo: deliveriesRepo(db.sql) }) });
    onStop(() => fanout.stop());
    serve(webhooksRpc, webhooksHandlers(svc));
  },
});
