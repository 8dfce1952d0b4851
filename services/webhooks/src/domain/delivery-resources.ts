import type { Database } from "@tasksvc/db";
import type { Logger } from "@tasksvc/logger";

/** The retry schedule and the auto-disable rule (DESIGN.md 5), as the settings give them. */
export interface DeliveryPolicy {
  /** WEBHOOK_RETRY_DELAYS: the delay before each attempt; its length is the number of attempts. */
  retryDelays: readonly number[];
  /** WEBHOOK_DISABLE_AFTER and WEBHOOK_DISABLE_MIN_AGE. */
  disableAfter: number;
  disableMinAgeMs: number;
}

/**
 * What the delivery systems (dispatch, attempts) share, built once by the service. Each system
 * opens its own transactions on `db` and binds its repository to them: no caller hands a
 * transaction in.
 */
export interface DeliveryResources {
  db: Pick<Database, "sql" | "tx">;
  policy: DeliveryPolicy;
  log: Logger;
  now: () => Date;
}
