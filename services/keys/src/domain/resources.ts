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
  // One repository per transaction connection, made once: it holds nothing but the connection,
  // and building its closures for every transaction showed in the mint's profile.
  const repos = new WeakMap<object, KeysRepo>();
  const repoOf = (t: Parameters<Parameters<Database["tx"]>[0]>[0]): KeysRepo => {
    let r = repos.get(t);
    if (!r) {
      r = keysRepo(t);
      repos.set(t, r);
    }
    return r;
  };
  return { repo: keysRepo(db.sql), tx: (fn, opts) => db.tx((t) => fn(repoOf(t)), opts), ...o };
}
