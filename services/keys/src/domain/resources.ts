import type { Database } from "@tasksvc/db";
import type { Logger } from "@tasksvc/logger";
import type { SecretBox } from "@tasksvc/secrets";
import { type KeysRepo, keysRepo } from "../repo/keys-repo.js";

/**
 * What every system of the keys domain (the keys service, the development issuer) runs on: each is
 * a function of this one object, plus the other systems it calls and settings only it reads.
 */
export interface KeysResources {
  /** The repository on the pool. */
  repo: KeysRepo;
  /** Runs `fn` in one transaction with a repository bound to it. */
  tx<T>(fn: (repo: KeysRepo) => Promise<T>): Promise<T>;
  /** KEYS_SECRET_KEY's box: seals a new key's secret in its Idempotency-Key record, and the issuer's private key (decision 0022). */
  box: SecretBox;
  /** Tells every gateway replica to drop cached identities of an organization; resolves once sent. */
  invalidate(organizationId: string): Promise<void>;
  log: Logger;
}

/** The resources over a database. */
export function keysResources(db: Database, o: Omit<KeysResources, "repo" | "tx">): KeysResources {
  return { repo: keysRepo(db.sql), tx: (fn) => db.tx((t) => fn(keysRepo(t))), ...o };
}
