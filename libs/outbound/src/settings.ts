import { settings } from "@tasksvc/config";
import { z } from "zod";
import { webhookRetryDelays } from "./schedule.js";
import { DEV_SECRET_KEY, sealingKeySetting } from "@tasksvc/secrets";

/**
 * The webhook settings of DESIGN.md 6 and issue 11, one definition each; a process spreads the
 * ones it reads into its config schema (docs/operations.md lists who reads what).
 */
/** The WEBHOOK_SECRET_KEY setting: unset, the public development key, flagged so the process warns. */
export const webhookSecretKey = sealingKeySetting("WEBHOOK_SECRET_KEY", DEV_SECRET_KEY);

export const webhookSettings = {
  /** Key that seals signing secrets at rest (webhooks service). */
  WEBHOOK_SECRET_KEY: webhookSecretKey,
  /** Accept http: destinations (local use, tests). */
  WEBHOOK_ALLOW_HTTP: settings.bool(false),
  /** Let calls reach loopback, private and other internal addresses, never a metadata address. */
  WEBHOOK_ALLOW_PRIVATE_TARGETS: settings.bool(false),
  /** Delay before each attempt; its length is the number of attempts. */
  WEBHOOK_RETRY_DELAYS: webhookRetryDelays,
  /** Consecutive failed attempts before an endpoint is disabled (with WEBHOOK_DISABLE_MIN_AGE). */
  WEBHOOK_DISABLE_AFTER: z.coerce.number().int().min(1).max(1_000_000).default(100),
  /** ... and no success for at least this long. */
  WEBHOOK_DISABLE_MIN_AGE: settings.duration("5d"),
  /** One attempt's time limit, connection included. */
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(15_000),
  /**
   * How long an attempt in flight may go unreported before it is counted and dispatched again:
   * the backstop for a job the stream lost (a worker killed mid-call is noticed sooner, through
   * its jobs and its call window). Must exceed WEBHOOK_TIMEOUT_MS.
   */
  WEBHOOK_LEASE: settings.duration("2m"),
  /** Attempts in flight to one endpoint at most, across all workers (the dispatcher's bound). */
  WEBHOOK_ENDPOINT_CONCURRENCY: z.coerce.number().int().min(1).max(1000).default(32),
  /** Calls in flight at most in one delivery worker process. */
  WEBHOOK_CONCURRENCY: z.coerce.number().int().min(1).max(10_000).default(256),
} as const;
