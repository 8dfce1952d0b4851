import { settings } from "@tasksvc/config";
import { z } from "zod";
import { webhookRetryDelays } from "./schedule.js";
import { DEV_SECRET_KEY, sealingKeySetting } from "@tasksvc/secrets";

// Each webhook setting defined once; a process spreads the ones it reads (docs/operations.md).
/** Unset, the public development key, flagged so the process warns. */
export const webhookSecretKey = sealingKeySetting("WEBHOOK_SECRET_KEY", DEV_SECRET_KEY);

export const webhookSettings = {
  WEBHOOK_SECRET_KEY: webhookSecretKey,
  WEBHOOK_ALLOW_HTTP: settings.bool(false),
  /** Never a metadata address, even so. */
  WEBHOOK_ALLOW_PRIVATE_TARGETS: settings.bool(false),
  /** Its length is the number of attempts. */
  WEBHOOK_RETRY_DELAYS: webhookRetryDelays,
  /** Disabling also needs no success for WEBHOOK_DISABLE_MIN_AGE. */
  WEBHOOK_DISABLE_AFTER: z.coerce.number().int().min(1).max(1_000_000).default(100),
  WEBHOOK_DISABLE_MIN_AGE: settings.duration("5d"),
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(15_000),
  /** The backstop for a job the stream lost (a dead worker is noticed sooner); must exceed WEBHOOK_TIMEOUT_MS. */
  WEBHOOK_LEASE: settings.duration("2m"),
  /** Across all workers. */
  WEBHOOK_ENDPOINT_CONCURRENCY: z.coerce.number().int().min(1).max(1000).default(32),
  WEBHOOK_CONCURRENCY: z.coerce.number().int().min(1).max(10_000).default(256),
} as const;
