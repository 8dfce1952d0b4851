import { Usage } from "@tasksvc/contracts";
import { resource } from "../operations.js";

export const usage = resource("usage", (r) => {
  r.op(
    {
      method: "GET",
      url: "/v1/usage",
      summary: "API-call consumption of the current billing period (this call included)",
      scope: "usage:read",
      response: Usage,
      exactCharge: true,
    },
    // The gateway owns the counters; nothing to forward.
    async ({ identity, charge }) => ({
      plan: identity.plan,
      period_start: charge.quota.periodStart.toISOString(),
      period_end: charge.quota.periodEnd.toISOString(),
      calls_used: charge.quota.used,
      calls_allowance: charge.quota.limit,
      burst: {
        limit: charge.burst.limit,
        window_seconds: charge.burst.windowSeconds,
        remaining: charge.burst.remaining,
        reset_at: charge.burst.resetAt.toISOString(),
      },
    }),
  );
});
