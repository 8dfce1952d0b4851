import { randomBase62 } from "@tasksvc/secrets";

/** `admin legacy-key` mints the pre-migration user-owned form, `svc_<40 base62>`. */
export function mintKeySecret(kind: "live" | "test" | "legacy"): string {
  return kind === "legacy" ? `svc_${randomBase62(40)}` : `svc_${kind}_${randomBase62(43)}`;
}

/** An invitation's token: at least 256 random bits, and a prefix no credential has, so it is never mistaken for a key. */
export function mintInvitationToken(): string {
  return `invite_${randomBase62(43)}`;
}

/** An OAuth client's public identifier: not a secret, but unguessable so that it tells nothing about other clients. */
export function mintClientId(): string {
  return `cli_${randomBase62(22)}`;
}

/** At least 256 random bits, with a prefix that secret scanners can recognise. */
export function mintClientSecret(): string {
  return `oacs_${randomBase62(43)}`;
}

export { hashApiKey as hashKey } from "@tasksvc/secrets";

/**
 * DEVELOPMENT ONLY, so `make run` works out of the box: it is public, so secrets sealed with it
 * are effectively plain text, and the service warns at start.
 */
export const DEV_KEYS_SECRET_KEY = "dGFza3N2Yy1ERVYtT05MWS1hcGkta2V5cy1rZXktMDA=";

export function keyPrefix(secret: string): string {
  return secret.slice(0, 12);
}
