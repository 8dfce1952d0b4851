import { fileURLToPath } from "node:url";
import { serviceSettings, settings } from "@tasksvc/config";
import { webhooksRpc } from "@tasksvc/contracts";
import { secretBox, webhookSecretKey } from "@tasksvc/outbound";
import { defineService } from "@tasksvc/runtime";
import { z } from "zod";
import { endpointsService } from "./domain/endpoints-service.js";
import { endpointsRepo } from "./repo/endpoints-repo.js";
import { webhooksHandlers } from "./rpc.js";

export const WebhooksConfig = z.object({
  ...serviceSettings,
  WEBHOOK_SECRET_KEY: webhookSecretKey,
  WEBHOOK_ALLOW_HTTP: settings.bool(false),
});
export type WebhooksConfig = z.output<typeof WebhooksConfig>;

export const MIGRATIONS_DIR = fileURLToPath(new URL("../migrations", import.meta.url));

/** The webhooks service: organizations' webhook endpoints and their signing secrets (issue 11). */
export const service = defineService({
  name: "webhooks",
  schema: "webhooks",
  migrations: MIGRATIONS_DIR,
  config: WebhooksConfig,
  async start({ cfg, db, serve, every, log }) {
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
    serve(webhooksRpc, webhooksHandlers(svc));
  },
});
