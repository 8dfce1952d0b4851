import { randomBase62 } from "@tasksvc/secrets";

/**
 * Key formats (DESIGN.md section 2): `svc_live_<43 base62>` / `svc_test_<43 base62>` (~256 bits).
 * Pre-migration user-owned keys were `svc_<40 base62>`; `admin legacy-key` mints that form.
 */
export function mintKeySecret(kind: "live" | "test" | "legacy"): string {
  return kind === "legacy" ? `svc_${randomBase62(40)}` : `svc_${kind}_${randomBase62(43)}`;
}

/** The only thing stored about a secret (the definition is shared with the gateway). */
export { hashApiKey as hashKey } from "@tasksvc/secrets";

/**
 * DEVELOPMENT ONLY: the key KEYS_SECRET_KEY falls back to when unset, so `make run` works out of
 * the box. It is public (in this repository), so secrets sealed with it are effectively plain
 * text; the service logs a warning at start. Base64 of the 32 ASCII bytes
 * "tasksvc-DEV-ONLY-api-keys-key-00".
 */
export const DEV_KEYS_SECRET_KEY = "dGFza3N2Yy1ERVYtT05MWS1hcGkta2V5cy1rZXktMDA=";

/** The non-secret fingerprint shown in listings: the first 12 characters. */
export function keyPrefix(secret: string): string {
  return secret.slice(0, 12);
}
