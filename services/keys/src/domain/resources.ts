import type { Database, TxOptions } from "@tasksvc/db";
import type { Logger } from "@tasksvc/logger";
import type { SecretBox } from "@tasksvc/secrets";
import { type KeysRepo, keysRepo } from "../repo/keys-repo.js";

export interface KeysResources {
  repo: KeysRepo;
  tx<T>(fn: (repo: KeysRepo) => Promise<T>, opts?: TxOptions): Promise<T>;
  /** Seals a new key's secret in its Idempotency-Key record, and the issuer's private key (decision 0022). */
  box: SecretBox;
  /** Resolves once sent. */
  invalidate(organizationId: string): Promise<void>;
  log: Logger;
  /** Wakes the audit outbox's relay after a commit that wrote audit events. */
  written(): void;
}

export function keysResources(db: Database, o: Omit<KeysResources, "repo" | "tx">): KeysResources {
  return { repo: keysRepo(db.sql), tx: (fn, opts) => db.tx((t) => fn(keysRepo(t)), opts), ...o };
}
