import type { CallResult, ReportedAttempt } from "@tasksvc/contracts";
import { delayAfterFailure } from "@tasksvc/outbound";
import type { DeliveryUpdate, EndpointStreak, StreakUpdate } from "../repo/attempts-repo.js";
import type { DeliveryPolicy } from "./resources.js";

// The rules both delivery systems apply: what a failed attempt leads to, and an endpoint's
// failure streak. Pure: the systems read the rows and write the answers.

/** Why an endpoint was disabled automatically (spec 2.8 `disabled_reason`; decision 0015). */
export const DISABLED_GONE = "endpoint_gone";
export const DISABLED_FAILING = "consecutive_failures";

export const succeeded = (r: CallResult) => r.outcome === "delivered";

/** The next state after a failed attempt `attempt` (1-based): a retry, FAILED, or DISABLED. */
export function afterFailure(
  policy: DeliveryPolicy,
  id: string,
  attempt: number,
  status: number | null,
  retryAfterMs: number | null,
  endpointEnabled: boolean,
): DeliveryUpdate {
  if (!endpointEnabled) return { id, state: "DISABLED", attemptCount: attempt, lastStatus: status, nextInMs: null };
  const delay = delayAfterFailure({
    delays: policy.retryDelays,
    attemptsMade: attempt,
    status: status ?? undefined,
    retryAfterMs: retryAfterMs ?? undefined,
  });
  return delay === null
    ? { id, state: "FAILED", attemptCount: attempt, lastStatus: status, nextInMs: null }
    : { id, state: "PENDING", attemptCount: attempt, lastStatus: status, nextInMs: delay };
}

/**
 * An endpoint's streak after these results, in the order they happened: a success ends it, a
 * failure extends it; a 410 disables at once, and a streak of `disableAfter` failures that began
 * at least `disableMinAgeMs` ago disables too (DESIGN.md 5).
 */
export function streakAfter(policy: DeliveryPolicy, e: EndpointStreak, results: readonly ReportedAttempt[], at: Date): StreakUpdate {
  let failureCount = e.failureCount;
  let failingSince = e.failingSince;
  let gone = false;
  let lastSuccessAt: Date | null = null;
  let lastFailureAt: Date | null = null;
  const later = (a: Date | null, b: Date) => (a === null || b > a ? b : a);
  for (const r of results) {
    if (succeeded(r.result)) {
      failureCount = 0;
      failingSince = null;
      lastSuccessAt = later(lastSuccessAt, new Date(r.attempted_at));
      continue;
    }
    lastFailureAt = later(lastFailureAt, new Date(r.attempted_at));
    failureCount += 1;
    failingSince ??= new Date(r.attempted_at);
    if (r.result.status === 410) gone = true;
  }
  let disabledReason: string | null = null;
  if (e.enabled && gone) disabledReason = DISABLED_GONE;
  else if (e.enabled && failingSince !== null && failureCount >= policy.disableAfter && at.getTime() - failingSince.getTime() >= policy.disableMinAgeMs) {
    disabledReason = DISABLED_FAILING;
  }
  return { id: e.id, failureCount, failingSince, lastSuccessAt, lastFailureAt, disabledReason };
}
