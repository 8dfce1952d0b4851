import { QUOTA_PERIOD_SECONDS, type Identity } from "@tasksvc/contracts";
import { AppError } from "@tasksvc/errors";
import type { GatewayRepo } from "../repo/gateway-repo.js";

export interface Charge {
  burst: { limit: number; windowSeconds: number; remaining: number; resetAt: Date };
  quota: { limit: number; used: number; periodStart: Date; periodEnd: Date };
}

const secondsUntil = (d: Date) => Math.max(1, Math.ceil((d.getTime() - Date.now()) / 1000));

/**
 * Counts one API call for the credential (burst) and its organization (billing period), or
 * refuses it with 429. State lives in Postgres, so limits hold across any number of replicas.
 */
export async function chargeCall(repo: GatewayRepo, id: Identity): Promise<Charge> {
  const l = id.limits;
  const row = await repo.charge({
    credentialId: id.credential_id,
    burst: l.burst,
    windowSeconds: l.burst_window_seconds,
    orgId: id.organization_id,
    anchor: id.organization_created_at,
    quota: l.quota,
    periodSeconds: QUOTA_PERIOD_SECONDS,
  });
  const charge: Charge = {
    burst: { limit: l.burst, windowSeconds: l.burst_window_seconds, remaining: Math.max(0, l.burst - row.burst_count), resetAt: row.window_end },
    quota: { limit: l.quota, used: Number(row.quota_count), periodStart: row.period_start, periodEnd: row.period_end },
  };
  switch (row.outcome) {
    case "ok":
      return charge;
    case "rate_limited":
      throw new AppError("rate_limited", `Burst limit of ${l.burst} requests per ${l.burst_window_seconds} s exceeded for this credential; retry after the Retry-After delay.`, {
        retryAfter: secondsUntil(row.window_end),
      });
    case "quota_exhausted":
      throw new AppError("quota_exhausted", `The organization's allowance of ${l.quota} API calls for this billing period is used up; it renews at ${row.period_end.toISOString()}.`, {
        retryAfter: secondsUntil(row.period_end),
      });
  }
}

/** RFC 9651 structured fields as in DESIGN.md section 3, plus the X-RateLimit-* trio. */
export function rateLimitHeaders(c: Charge): Record<string, string> {
  const periodSeconds = Math.round((c.quota.periodEnd.getTime() - c.quota.periodStart.getTime()) / 1000);
  return {
    "ratelimit-policy": `"burst";q=${c.burst.limit};w=${c.burst.windowSeconds}, "api-calls";q=${c.quota.limit};w=${periodSeconds}`,
    ratelimit: `"burst";r=${c.burst.remaining};t=${secondsUntil(c.burst.resetAt)}`,
    "x-ratelimit-limit": String(c.burst.limit),
    "x-ratelimit-remaining": String(c.burst.remaining),
    "x-ratelimit-reset": String(Math.ceil(c.burst.resetAt.getTime() / 1000)),
  };
}
