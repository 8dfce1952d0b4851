import type { CallResult, ReportedAttempt } from "@tasksvc/contracts";
import { delayAfterFailure } from "@tasksvc/outbound";
import type { DeliveryUpdate, EndpointStreak, StreakUpdate } from "../repo/attempts-repo.js";
import type { DeliveryPolicy } from "./resources.js";

// Pure: the systems read the rows and write the answers.

export const DISABLED_GONE = "endpoint_gone";
export const DISABLED_FAILING = "consecutive_failures";

export const succeeded = (r: CallResult) => r.outcome === "delivered";

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

/** A 410 disables at once; a streak of `disableAfter` failures begun `disableMinAgeMs` ago or earlier disables too. */
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
