import type { Database } from "@tasksvc/db";
import type { Logger } from "@tasksvc/logger";
import type { SecretBox } from "@tasksvc/secrets";
import { type Signer, signer } from "./signer.js";

export interface DeliveryPolicy {
  /** Its length is the number of attempts. */
  retryDelays: readonly number[];
  disableAfter: number;
  disableMinAgeMs: number;
}

/** Each system opens its own transactions on `db`: no caller hands a transaction in. */
export interface WebhooksResources {
  db: Pick<Database, "sql" | "tx">;
  /** Signing secrets are stored sealed, never plain. */
  box: SecretBox;
  /** Only this service holds WEBHOOK_SECRET_KEY. */
  signer: Signer;
  policy: DeliveryPolicy;
  log: Logger;
  now: () => Date;
  /** Wakes the outbox relay. */
  written(): void;
  /** Wakes the audit outbox's relay. */
  audited(): void;
  wake(): void;
}

export function webhooksResources(
  db: WebhooksResources["db"],
  o: { box: SecretBox; policy: DeliveryPolicy; log: Logger; now?: () => Date; written?: () => void; audited?: () => void; wake?: () => void },
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
    audited: o.audited ?? (() => undefined),
    wake: o.wake ?? (() => undefined),
  };
}
