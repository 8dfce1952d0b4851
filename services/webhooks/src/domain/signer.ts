import type { SignedRequest } from "@tasksvc/contracts";
import { unixSeconds, webhookHeaders } from "@tasksvc/outbound";
import type { SecretBox } from "@tasksvc/secrets";
import type { SealedSecrets } from "../repo/endpoints-repo.js";

/**
 * Only this service holds WEBHOOK_SECRET_KEY: the delivery service gets a signed request, never a
 * secret (decision 0015). Signed right before the call, so `webhook-timestamp` is the sending time.
 */
export function signer(box: SecretBox, now: () => Date = () => new Date()) {
  // Each attempt would otherwise decrypt the same string again. A sealed string is unique (random
  // IV), so a rotation misses the cache rather than finding a stale entry.
  const opened = new Map<string, string>();
  const open = (sealed: string): string => {
    let plain = opened.get(sealed);
    if (plain === undefined) {
      plain = box.open(sealed);
      if (opened.size >= CACHE_MAX) opened.clear();
      opened.set(sealed, plain);
    }
    return plain;
  };

  function liveSecrets(s: SealedSecrets, at: Date = now()): string[] {
    const live = [open(s.secretSealed)];
    if (s.previousSecretSealed !== null && s.previousSecretExpiresAt !== null && s.previousSecretExpiresAt > at) live.push(open(s.previousSecretSealed));
    return live;
  }

  /** `id` is the event id: the same webhook-id on every attempt and replay. */
  function sign(url: string, secrets: SealedSecrets, id: string, body: string): SignedRequest {
    const at = now();
    const headers = webhookHeaders({ id, timestamp: unixSeconds(at), body, secrets: liveSecrets(secrets, at) });
    return { url, headers: { ...headers }, body };
  }

  return { liveSecrets, sign };
}
export type Signer = ReturnType<typeof signer>;

const CACHE_MAX = 10_000;
