import { MAX_LIVE_API_KEYS } from "@tasksvc/contracts";
import type { AuditEntry } from "@tasksvc/db";
import { keyBatches } from "@tasksvc/runtime";
import type { KeysRepo, NewKey } from "../repo/keys-repo.js";
import type { KeysResources } from "./resources.js";

/** One POST /v1/api-keys: its key, its Idempotency-Key record (if any) and its audit event. */
export interface Mint {
  key: NewKey & { createdAt: Date };
  once: { credentialId: string; key: string; result: unknown } | null;
  created: AuditEntry;
}
export type Minted = Awaited<ReturnType<KeysRepo["mintApiKey"]>>;

/** At most this many mints of one organization in one transaction (the live keys it may hold are fewer). */
const MINTS_PER_TRANSACTION = 32;

/**
 * Concurrent mints of one organization queue on its lock, each counting what the ones before it
 * wrote; this replica sends those that arrive while one runs together, in one transaction: one
 * lock, one commit, each mint still its own statement, which sees the ones before it in the same
 * transaction (decision 0050). BEGIN, the lock, the mints (each with its audit event) and COMMIT
 * go out together: the server runs them in order, so each snapshot is taken under the lock, and
 * the lock is held only while the server works; nothing here waits on an answer first.
 */
export function mintsTogether(res: Pick<KeysResources, "tx">): (orgId: string, mint: Mint) => Promise<Minted> {
  return keyBatches<Mint, Minted>(MINTS_PER_TRANSACTION, (orgId, mints) =>
    res.tx(
      async (r) => {
        const [, out] = await Promise.all([
          r.lockOrganizationKeys(orgId),
          Promise.all(mints.map((m) => r.mintApiKey(m.key, m.once, MAX_LIVE_API_KEYS, m.created))),
        ]);
        return out;
      },
      { commitAhead: true },
    ),
  );
}
