import { createHash } from "node:crypto";

/**
 * `key_hash` on the wire: SHA-256 (hex) of the whole API key. The gateway hashes before calling
 * the keys service, so a key never crosses NATS; the keys service stores nothing else.
 */
export function hashApiKey(secret: string): string {
  return createHash("sha256").update(secret).digest("hex");
}
