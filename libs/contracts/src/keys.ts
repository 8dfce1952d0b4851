import { createHash } from "node:crypto";
import { z } from "zod";
import { Identity, Limits, Plan, Role, Scope } from "./auth.js";
import { Label, OpaqueId, PageQuery, Timestamp, page } from "./common.js";
import type { RpcCatalog } from "./rpc.js";

export const Organization = z.object({
  id: z.string(),
  name: z.string(),
  plan: Plan,
  created_at: Timestamp,
});
export type Organization = z.infer<typeof Organization>;

export const Member = z.object({
  user_id: z.string(),
  email: z.string(),
  role: Role,
  created_at: Timestamp,
});
export type Member = z.infer<typeof Member>;

export const ApiKey = z.object({
  id: z.string(),
  name: z.string().nullable(),
  key_prefix: z.string().nullable(),
  scopes: z.array(Scope),
  last_used_at: Timestamp.nullable(),
  expires_at: Timestamp.nullable(),
  created_at: Timestamp,
  legacy: z.boolean(),
});
export type ApiKey = z.infer<typeof ApiKey>;

/** Only the creation response carries the plaintext secret (spec 2.7). */
export const CreatedApiKey = ApiKey.extend({ key: z.string() });
export type CreatedApiKey = z.infer<typeof CreatedApiKey>;

export const CreateApiKeyBody = z.strictObject({
  name: Label.min(1).max(200),
  scopes: z.array(Scope).min(1).optional(),
  test_mode: z.boolean().optional(),
  expires_in_days: z.number().int().min(1).max(365).optional(),
});
export type CreateApiKeyBody = z.infer<typeof CreateApiKeyBody>;

export const RevokedApiKey = z.object({ id: z.string(), legacy: z.boolean() });

export const OrganizationIdParams = z.object({ organization_id: OpaqueId });
export const KeyIdParams = z.object({ key_id: OpaqueId });

export const Email = z.email().max(320);

/** The admin CLI's view of effective limits (DESIGN.md section 2, set-limits). */
export const EffectiveLimits = z.object({ organization_id: z.string(), plan: Plan, limits: Limits });

export const Jwk = z.record(z.string(), z.unknown());

export const keysRpc = {
  service: "keys",
  ops: {
    // Gateway: resolving credentials.
    authenticateKey: { input: z.object({ key_hash: z.string().regex(/^[0-9a-f]{64}$/) }), output: Identity.nullable() },
    // Claims of a verified access token: signed, but still text that reaches Postgres.
    resolveMember: {
      input: z.object({ organization_id: Label, user_id: Label, credential_id: Label, scopes: z.array(Scope), expires_at: Timestamp }),
      output: Identity.nullable(),
    },
    devJwks: { input: z.object({}), output: z.object({ issuer: z.string(), keys: z.array(Jwk) }) },
    // Public API.
    listOrganizations: { input: PageQuery, output: page(Organization) },
    getOrganization: { input: OrganizationIdParams, output: Organization },
    listMembers: { input: PageQuery, output: page(Member) },
    createApiKey: { input: CreateApiKeyBody, output: CreatedApiKey },
    listApiKeys: { input: PageQuery, output: page(ApiKey) },
    revokeApiKey: { input: KeyIdParams, output: RevokedApiKey },
    // Admin CLI (DESIGN.md section 2).
    bootstrap: {
      input: z.object({
        org: Label.min(1).max(200),
        plan: Plan,
        email: Email,
        /**
         * When an organization of this name already has this email as an owner (a CI job run
         * again): absent creates another one (the original behaviour); "refuse" answers
         * validation_failed; "reuse" answers that organization and owner with a fresh owner key.
         */
        if_exists: z.enum(["refuse", "reuse"]).optional(),
      }),
      output: z.object({ organization_id: z.string(), user_id: z.string(), api_key: z.string() }),
    },
    /** Ends a membership: the user's keys in the organization are revoked; the last owner stays. */
    removeMember: {
      input: z.object({ org: OpaqueId, user: OpaqueId }),
      output: z.object({ organization_id: z.string(), user_id: z.string(), revoked_keys: z.number().int() }),
    },
    addUser: {
      input: z.object({ org: OpaqueId, email: Email, role: Role }),
      output: z.object({ user_id: z.string(), api_key: z.string() }),
    },
    setRole: {
      input: z.object({ org: OpaqueId, user: OpaqueId, role: Role }),
      output: z.object({ user_id: z.string(), role: Role }),
    },
    setPlan: {
      input: z.object({ org: OpaqueId, plan: Plan }),
      output: z.object({ organization_id: z.string(), plan: Plan }),
    },
    setLimits: {
      input: z.object({
        org: OpaqueId,
        burst: z.number().int().positive().optional(),
        quota: z.number().int().positive().optional(),
        max_file_size: z.number().int().positive().optional(),
        storage: z.number().int().positive().optional(),
      }),
      output: EffectiveLimits,
    },
    legacyKey: {
      input: z.object({ org: OpaqueId, user: OpaqueId }),
      output: z.object({ id: z.string(), api_key: z.string() }),
    },
    issueToken: {
      input: z.object({ org: OpaqueId, user: OpaqueId, scopes: z.array(Scope).min(1), ttl: z.number().int().min(1).max(86_400).default(3600) }),
      output: z.object({ access_token: z.string(), expires_at: Timestamp }),
    },
  },
} as const satisfies RpcCatalog;

/** Broadcast by the keys service whenever cached identities of an organization become stale. */
export const KeysInvalidation = z.object({ organization_id: z.string() });
export function keysInvalidationSubject(namespace: string): string {
  return `${namespace}.evt.keys.invalidate`;
}

/**
 * `key_hash` on the wire: SHA-256 (hex) of the whole secret. The gateway hashes before calling the
 * keys service, so a secret never crosses NATS; the keys service stores nothing else.
 */
export function hashApiKey(secret: string): string {
  return createHash("sha256").update(secret).digest("hex");
}

/** GET /v1/usage (DESIGN.md section 4): the caller's organization's consumption, this call included. */
export const Usage = z.object({
  plan: Plan,
  period_start: Timestamp,
  period_end: Timestamp,
  calls_used: z.number().int(),
  calls_allowance: z.number().int(),
  burst: z.object({ limit: z.number().int(), window_seconds: z.number().int(), remaining: z.number().int(), reset_at: Timestamp }),
  /** Bytes of the organization's registered attachments (issue 12). */
  storage_used: z.number().int(),
  /** The plan's storage allowance, in bytes (DESIGN.md 3; `set-limits --storage`). */
  storage_allowance: z.number().int(),
  /** The plan's largest file, in bytes. */
  max_file_size: z.number().int(),
});
export type Usage = z.infer<typeof Usage>;
