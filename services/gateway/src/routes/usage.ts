import { Usage } from "@tasksvc/contracts";
import { resource } from "../pipeline/resource.js";

export const usage = resource({ name: "usage", scope: "usage:read" }, (r) => {
  r.op(
    {
      method: "GET",
      url: "/v1/usage",
      operationId: "getUsage",
      summary: "API-call consumption of the current billing period (this call included), attachment storage, and the plan's other limits",
      response: Usage,
      exactCharge: true,
    },
    async ({ identity, charge, clients, ctx }) => {
      // Not idempotent, so never a replay: always charged (exactly, for current counters).
      if (!charge) throw new Error("GET /v1/usage ran uncharged");
      return {
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
        storage_used: (await clients.tasks.call("storageUsage", {}, ctx)).used_bytes,
        storage_allowance: identity.limits.storage,
        max_file_size: identity.limits.max_file_size,
        webhook_endpoints_allowance: identity.limits.webhook_endpoints,
      };
    },
  );
});
