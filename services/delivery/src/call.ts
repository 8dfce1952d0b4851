import type { CallResult, SignedRequest } from "@tasksvc/contracts";
import { postGuarded, retryAfterMs, type EgressOptions } from "@tasksvc/outbound";

export interface CallOptions extends EgressOptions {
  timeoutMs: number;
}

/** Checked at dial time against the address actually connected to, no redirect followed. Never rejects. */
export async function sendSigned(request: SignedRequest, o: CallOptions, now: () => Date = () => new Date()): Promise<CallResult> {
  const r = await postGuarded(request.url, { ...o, headers: request.headers, body: request.body });
  return {
    outcome: r.outcome,
    status: r.status ?? null,
    error_class: r.errorClass ?? null,
    duration_ms: r.durationMs,
    retry_after_ms: r.status === undefined ? null : (retryAfterMs(r.retryAfter, now()) ?? null),
  };
}
