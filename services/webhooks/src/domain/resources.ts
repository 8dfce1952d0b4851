import type { Database } from "@tasksvc/db";
import type { Logger } from "@tasksvc/logger";
import type { SecretBox } from "@tasksvc/secrets";
import { type Signer, signer } from "./signer.js";

/** The retry schedule and the auto-disable rule (DESIGN.md 5), as the settings give them. */
export interface DeliveryPolicy {
  /** WEBHOOK_RETRY_DELAYS: the delay before each attempt; its length is the number of attempts. */
  retryDelays: readonly number[];
  /** WEBHOOK_DISABLE_AFTER and WEBHOOK_DISABLE_MIN_AGE. */
  disableAfter: number;
  disableMinAgeMs: number;
}

/**
 * What every system of the webhooks domain (endpoints, fan-out, dispatch, attempts, the delivery
 * log and its statistics) runs on, built once by the service: each is a function of this one
 * object, plus settings only it reads. Each system opens its own transactions on `db` and binds
 * its repository to them: no caller hands a transaction in.
 */
export interface WebhooksResources {
  db: Pick<Database, "sql" | "tx">;
  /** WEBHOOK_SECRET_KEY's box: signing secrets are stored sealed, never plain. */
  box: SecretBox;
  /** Signs requests with an endpoint's live secrets (only this service holds WEBHOOK_SECRET_KEY). */
  signer: Signer;
  policy: DeliveryPolicy;
  log: Logger;
  now: () => Date;
  /** Called after a transaction that wrote endpoints' operational events commits (wakes the relay). */
  written(): void;
  /** Deliveries are due now, or an endpoint's slot was freed: dispatch now rather than at the next poll. */
  wake(): void;
}

/** The resources over a database; `written` and `wake` do nothing when absent (no relay, no dispatcher). */
export function webhooksResources(
  db: WebhooksResources["db"],
  o: { box: SecretBox; policy: DeliveryPolicy; log: Logger; now?: () => Date; written?: () => void; wake?: () => void },
): WebhooksResources {
  const now = o.now ?? (() => new Date());
  return {
    db,
    box: o.box,
    signer: signer(o.box, now),
    policy: o.policy,
    log: o.log,
    now,
    written: o.written ?? (() => undefined),
    wake: o.wake ?? (() => undefined),
  };
}
