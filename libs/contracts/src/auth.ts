import { z } from "zod";

export const SCOPES = [
  "workspaces:read",
  "tasks:read",
  "tasks:write",
  "members:read",
  "members:write",
  "projects:read",
  "projects:write",
  "usage:read",
  "api-keys:manage",
  "webhooks:read",
  "webhooks:write",
  "audit:read",
] as const;
export const Scope = z.enum(SCOPES);
export type Scope = z.infer<typeof Scope>;

/**
 * Scopes that hand out power over others (minting keys, changing members), or show what others did
 * from where (the audit log's addresses and User-Agents), come only when asked for.
 */
export const EXPLICIT_ONLY_SCOPES: readonly Scope[] = ["api-keys:manage", "members:write", "audit:read"];
export const DEFAULT_KEY_SCOPES: readonly Scope[] = SCOPES.filter((s) => !EXPLICIT_ONLY_SCOPES.includes(s));

export const PLANS = ["free", "pro", "team"] as const;
export const Plan = z.enum(PLANS);
export type Plan = z.infer<typeof Plan>;

export const ROLES = ["owner", "admin", "member"] as const;
export const Role = z.enum(ROLES);
export type Role = z.infer<typeof Role>;

export const ENTITLEMENTS = ["public_api", "outbound_webhooks"] as const;
export const Entitlement = z.enum(ENTITLEMENTS);
export type Entitlement = z.infer<typeof Entitlement>;

export interface PlanDefaults {
  entitlements: readonly Entitlement[];
  burst: number;
  burstWindowSeconds: number;
  quota: number;
  maxFileSize: number;
  storage: number;
  /** 0 where the plan has no webhooks. */
  webhookEndpoints: number;
}

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

/** The endpoint cap bounds how many outbound calls one write can cause: 16, as Stripe allows (an organization that needs more gets an override). */
export const PLAN_DEFAULTS: Record<Plan, PlanDefaults> = {
  free: { entitlements: ["public_api"], burst: 60, burstWindowSeconds: 60, quota: 10_000, maxFileSize: 10 * MiB, storage: 100 * MiB, webhookEndpoints: 0 },
  pro: {
    entitlements: ["public_api", "outbound_webhooks"],
    burst: 120,
    burstWindowSeconds: 60,
    quota: 50_000,
    maxFileSize: 100 * MiB,
    storage: 10 * GiB,
    webhookEndpoints: 16,
  },
  team: {
    entitlements: ["public_api", "outbound_webhooks"],
    burst: 600,
    burstWindowSeconds: 60,
    quota: 500_000,
    maxFileSize: 250 * MiB,
    storage: 100 * GiB,
    webhookEndpoints: 16,
  },
};

export const QUOTA_PERIOD_SECONDS = 2_592_000;

export const Limits = z.object({
  burst: z.number().int().positive(),
  burst_window_seconds: z.number().int().positive(),
  quota: z.number().int().positive(),
  max_file_size: z.number().int().positive(),
  storage: z.number().int().positive(),
  webhook_endpoints: z.number().int().min(0),
  /**
   * Lists, searches and feed pages the organization may run at once on each tasks replica, when an
   * operator set it (`set-limits --scans`); null or absent: a quarter of the replica's connections.
   */
  scans: z.number().int().positive().nullable().optional(),
});
export type Limits = z.infer<typeof Limits>;

/** `kind` tells an API key from an OAuth access token (different 401 codes, different caching). */
export const Identity = z.object({
  kind: z.enum(["api_key", "access_token"]),
  credential_id: z.string(),
  organization_id: z.string(),
  organization_created_at: z.iso.datetime(),
  /** It never changes, so the gateway answers the credential's own organization without asking. */
  organization_name: z.string().optional(),
  user_id: z.string(),
  role: Role,
  scopes: z.array(Scope),
  plan: Plan,
  entitlements: z.array(Entitlement),
  limits: Limits,
  /** Caches must not outlive it. */
  expires_at: z.iso.datetime().nullable(),
  /** The OAuth client's id (`oac_…`) when the access token was issued by this service's own token endpoint. */
  client_id: z.string().optional(),
});
export type Identity = z.infer<typeof Identity>;
