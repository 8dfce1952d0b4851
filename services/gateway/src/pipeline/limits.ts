import { QUOTA_PERIOD_SECONDS, type Identity } from "@tasksvc/contracts";
import { AppError } from "@tasksvc/errors";
import type { ChargeLimits, ExactChargeRow } from "../repo/gateway-repo.js";

export interface Counters {
  burst: { limit: number; windowSeconds: number; remaining: number; resetAt: Date };
  quota: { limit: number; used: number; periodStart: Date; periodEnd: Date };
}

export interface Charge extends Counters {
  /** Keys as Postgres text, to give the call back with refund(). */
  counted: { credentialId: string; windowKey: string; orgId: string; periodKey: string };
}

const secondsUntil = (d: Date) => Math.max(1, Math.ceil((d.getTime() - Date.now()) / 1000));

/** One place for every statement that reads or counts them. */
export function countersOf(id: Identity): ChargeLimits {
  const l = id.limits;
  return {
    credentialId: id.credential_id,
    burst: l.burst,
    windowSeconds: l.burst_window_seconds,
    orgId: id.organization_id,
    anchor: id.organization_created_at,
    quota: l.quota,
    periodSeconds: QUOTA_PERIOD_SECONDS,
  };
}

export function refusal(id: Identity, row: Pick<ExactChargeRow, "outcome" | "window_end" | "period_end">): AppError {
  const l = id.limits;
  if (row.outcome === "rate_limited") {
    return new AppError(
      "rate_limited",
      `Burst limit of ${l.burst} requests per ${l.burst_window_seconds} s exceeded for this credential; retry after the Retry-After delay.`,
      {
        retryAfter: secondsUntil(row.window_end),
      },
    );
  }
  return new AppError(
    "quota_exhausted",
    `The organization's allowance of ${l.quota} API calls for this billing period is used up; it renews at ${row.period_end.toISOString()}.`,
    {
      retryAfter: secondsUntil(row.period_end),
    },
  );
}

/** Nothing of it was counted. */
export function batchRefusal(id: Identity, total: number, row: Pick<ExactChargeRow, "outcome" | "window_end" | "period_end">): AppError {
  const l = id.limits;
  if (row.outcome === "rate_limited") {
    const why =
      total > l.burst
        ? `more than the burst limit of ${l.burst} requests per ${l.burst_window_seconds} s can ever cover: send at most ${l.burst} items per batch`
        : `more than this credential's burst window of ${l.burst} requests per ${l.burst_window_seconds} s has left; retry after the Retry-After delay, or send fewer items`;
    return new AppError("rate_limited", `This batch counts ${total} calls (one per item), ${why}. Nothing was applied or counted.`, {
      retryAfter: secondsUntil(row.window_end),
    });
  }
  return new AppError(
    "quota_exhausted",
    `The organization's allowance of ${l.quota} API calls for this billing period has fewer left than the ${total} this batch counts (one per item); it renews at ${row.period_end.toISOString()}. Nothing was applied or counted.`,
    { retryAfter: secondsUntil(row.period_end) },
  );
}

/** RFC 9651 structured fields as in DESIGN.md section 3, plus the X-RateLimit-* trio. */
export function rateLimitHeaders(c: Counters): Record<string, string> {
  const periodSeconds = Math.round((c.quota.periodEnd.getTime() - c.quota.periodStart.getTime()) / 1000);
  return {
    "ratelimit-policy": `"burst";q=${c.burst.limit};w=${c.burst.windowSeconds}, "api-calls";q=${c.quota.limit};w=${periodSeconds}`,
    ratelimit: `"burst";r=${c.burst.remaining};t=${secondsUntil(c.burst.resetAt)}`,
    "x-ratelimit-limit": String(c.burst.limit),
    "x-ratelimit-remaining": String(c.burst.remaining),
    "x-ratelimit-reset": String(Math.ceil(c.burst.resetAt.getTime() / 1000)),
  };
}
