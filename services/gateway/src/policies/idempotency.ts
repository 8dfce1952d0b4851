import { createHash } from "node:crypto";
import { IDEMPOTENCY_KEY_PATTERN } from "@tasksvc/contracts";
import { AppError, fieldError } from "@tasksvc/errors";
import type { GatewayRepo } from "../repo/gateway-repo.js";

export type Claim =
  | { kind: "claimed"; credentialId: string; key: string }
  | { kind: "replay"; status: number; body: string; headers: Record<string, string> }
  /** Done before, but its outcome is the service's to replay (it held a secret): run it again, unheld. */
  | { kind: "forward" };

/** Spec 8: 1-255 visible ASCII characters (so never NUL, a control character or a byte above 0x7E). */
export function parseIdempotencyKey(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined;
  const v = Array.isArray(header) ? header.join(",") : header;
  if (!IDEMPOTENCY_KEY_PATTERN.test(v)) throw fieldError("/Idempotency-Key", "must be 1-255 visible ASCII characters");
  return v;
}

/** What "the same request" means: method, path with query, and the body byte for byte. */
export function requestFingerprint(method: string, url: string, rawBody: string | undefined): string {
  return createHash("sha256")
    .update(`${method}\n${url}\n`)
    .update(rawBody ?? "")
    .digest("hex");
}

/**
 * Claims the key for a first execution, or answers from the stored outcome (or says to forward
 * again, when the service keeps that outcome), or refuses: 422 when the key was used for
 * another request, 409 while the first execution still runs.
 */
export async function claimIdempotency(repo: GatewayRepo, credentialId: string, key: string, fingerprint: string, leaseMs: number): Promise<Claim> {
  if (await repo.claimIdempotencyKey(credentialId, key, fingerprint, leaseMs)) return { kind: "claimed", credentialId, key };
  const rec = await repo.idempotencyRecord(credentialId, key);
  // Gone between the two statements (released after a 5xx, or swept): claim again once.
  if (!rec) {
    if (await repo.claimIdempotencyKey(credentialId, key, fingerprint, leaseMs)) return { kind: "claimed", credentialId, key };
    throw new AppError("idempotency_in_progress", "A request with this Idempotency-Key is being executed; retry shortly.", { retryAfter: 1 });
  }
  if (rec.fingerprint !== fingerprint) {
    throw new AppError("idempotency_key_reused", "This Idempotency-Key was already used for a different request (method, path or body); use a new key.");
  }
  if (rec.status === null || rec.response_body === null) {
    throw new AppError("idempotency_in_progress", "A request with this Idempotency-Key is being executed; retry shortly.", { retryAfter: 1 });
  }
  if (rec.replay_from_service) return { kind: "forward" };
  return { kind: "replay", status: rec.status, body: rec.response_body, headers: rec.response_headers ?? {} };
}
