import { natsServiceSettings, settings } from "@tasksvc/config";
import { deliveryRpc, webhookAttemptsRpc } from "@tasksvc/contracts";
import { destinationRefusal, webhookSettings } from "@tasksvc/outbound";
import { defineStatelessService } from "@tasksvc/runtime";
import { z } from "zod";
import { sendSigned } from "./call.js";
import type { DeliveryResources } from "./resources.js";
import { JOB_ACK_WAIT_MS, startWorker } from "./worker.js";

export const DeliveryConfig = z.object({
  ...natsServiceSettings,
  RPC_TIMEOUT_MS: settings.RPC_TIMEOUT_MS,
  WEBHOOK_ALLOW_HTTP: webhookSettings.WEBHOOK_ALLOW_HTTP,
  WEBHOOK_ALLOW_PRIVATE_TARGETS: webhookSettings.WEBHOOK_ALLOW_PRIVATE_TARGETS,
  WEBHOOK_TIMEOUT_MS: webhookSettings.WEBHOOK_TIMEOUT_MS,
  WEBHOOK_CONCURRENCY: webhookSettings.WEBHOOK_CONCURRENCY,
});
export type DeliveryConfig = z.output<typeof DeliveryConfig>;

/**
 * The only process that makes outbound HTTP calls. No schema: the webhooks service holds the
 * truth of every delivery and every secret.
 */
export const service = defineStatelessService({
  name: "delivery",
  config: DeliveryConfig,
  async start({ cfg, nc, namespace, log, serve, client, onStop, health }) {
    if (cfg.WEBHOOK_ALLOW_PRIVATE_TARGETS)
      log.warn("WEBHOOK_ALLOW_PRIVATE_TARGETS is on: calls may reach internal addresses (never a metadata address); local use and tests only");
    const egress = { allowHttp: cfg.WEBHOOK_ALLOW_HTTP, allowPrivate: cfg.WEBHOOK_ALLOW_PRIVATE_TARGETS, timeoutMs: cfg.WEBHOOK_TIMEOUT_MS };
    const res: DeliveryResources = {
      webhooks: client(webhookAttemptsRpc, { timeoutMs: cfg.RPC_TIMEOUT_MS }),
      send: (request) => sendSigned(request, egress),
      log,
      now: () => new Date(),
    };
    const worker = await startWorker(res, {
      nc,
      namespace,
      concurrency: cfg.WEBHOOK_CONCURRENCY,
      health,
      ackWaitMs: JOB_ACK_WAIT_MS,
      callTimeoutMs: cfg.WEBHOOK_TIMEOUT_MS,
    });
    onStop(() => worker.stop());
    // Names resolve from here, where the calls are made, for the guard's verdict on an endpoint's URL.
    serve(deliveryRpc, {
      call: (request) => res.send(request),
      checkDestination: async ({ url }) => ({ refused: await destinationRefusal(url, egress) }),
    });
  },
});
