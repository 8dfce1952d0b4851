import { randomBase62 } from "@tasksvc/db";

/**
 * Key formats (DESIGN.md section 2): `svc_live_<43 base62>` / `svc_test_<43 base62>` (~256 bits).
 * Pre-migration user-owned keys were `svc_<40 base62>`; `admin legacy-key` mints that form.
 */
export function mintKeySecret(kind: "live" | "test" | "legacy"): string {
  return kind === "legacy" ? `svc_${randomBase62(40)}` : `svc_${kind}_${randomBase62(43)}`;
}

/** The only thing stored about a secret (the definition is shared with the gateway). */
export { hashApiKey as hashKey } from "@tasksvc/contracts";

/** The non-secret fingerprint shown in listings: the first 12 characters. */
export function keyPrefix(secret: string): string {
  return secret.slice(0, 12);
}
