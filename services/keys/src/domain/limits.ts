import { type Limits, PLAN_DEFAULTS } from "@tasksvc/contracts";
import type { OrgRow } from "../repo/org-row.js";

export function effectiveLimits(org: OrgRow): Limits {
  const d = PLAN_DEFAULTS[org.plan];
  return {
    burst: org.burst ?? d.burst,
    burst_window_seconds: d.burstWindowSeconds,
    quota: org.quota ?? d.quota,
    max_file_size: Number(org.max_file_size ?? d.maxFileSize),
    storage: Number(org.storage ?? d.storage),
    webhook_endpoints: org.webhook_endpoints ?? d.webhookEndpoints,
    // Not a plan's: null leaves each tasks replica's fair share.
    scans: org.scans ?? null,
  };
}
