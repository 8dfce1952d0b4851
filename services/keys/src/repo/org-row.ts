import type { Plan } from "@tasksvc/contracts";

/** An organization as stored: a file of its own, since every repository that builds an identity reads it. */
export interface OrgRow {
  id: string;
  name: string;
  plan: Plan;
  burst: number | null;
  quota: number | null;
  max_file_size: string | null;
  storage: string | null;
  webhook_endpoints: number | null;
  scans: number | null;
  created_at: Date;
}

/** What `set-limits` may override, each left as it is when not given. */
export const OVERRIDABLE = ["burst", "quota", "max_file_size", "storage", "webhook_endpoints", "scans"] as const;
export type LimitOverrides = { [K in (typeof OVERRIDABLE)[number]]?: number };
