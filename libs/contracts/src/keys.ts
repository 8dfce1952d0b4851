import { z } from "zod";
import { Identity, Limits, Plan, Role, Scope } from "./auth.js";
import { CreatedAt, EXAMPLE_INSTANT, Label, NO_BIDI_CONTROLS_MESSAGE, noBidiControls, OpaqueId, PageQuery, Timestamp, TrimmedLabel, page } from "./common.js";
import {
  AcceptedInvitation,
  AcceptInvitationBody,
  CreatedInvitation,
  CreateInvitationBody,
  Email,
  Invitation,
  InvitationIdParams,
  RemovedMember,
  StoredName,
  UpdateMemberBody,
  UserIdParams,
} from "./members.js";
import { AuditEvent, ListAuditEventsQuery } from "./audit.js";
import { oauthClientOps } from "./oauth-clients.js";
import type { RpcCatalog } from "./rpc.js";

/** Every path that mints a key counts against it, the admin CLI's included. */
export const MAX_LIVE_API_KEYS = 100;

export const OrganizationName = TrimmedLabel.min(1, { message: "must not be blank" }).max(200).refine(noBidiControls, { message: NO_BIDI_CONTROLS_MESSAGE });

const PLAN_DOC = { description: "The organization's plan: what it may use and how much.", examples: ["pro"] };
const KEY_ID = "key_2bN8xQ4mT7pL1vD9kR3sW6";

export const Organization = z.object({
  id: z.string().meta({ description: "The organization's id.", examples: ["org_3kTMd92jf7Qw1xYp8LmN2a"] }),
  name: z.string().meta({ description: "The organization's name.", examples: ["Acme"] }),
  plan: Plan.meta(PLAN_DOC),
  created_at: CreatedAt,
});
export type Organization = z.infer<typeof Organization>;

export const Member = z.object({
  user_id: z.string().meta({ description: "The user's id.", examples: ["usr_7hQ2mD9xK3pL5nB8vR4tW1"] }),
  email: z.string().meta({ description: "The user's email address (their identity in the organization).", examples: ["ada@example.com"] }),
  role: Role.meta({ description: "The member's role: owner, admin or member (owners and admins manage keys).", examples: ["member"] }),
  created_at: CreatedAt,
});
export type Member = z.infer<typeof Member>;

const SCOPES_DOC = { description: "What the key may do: one or more scopes.", examples: [["tasks:read", "tasks:write"]] };
const LEGACY_DOC = {
  description: "True for a key made before scopes existed (it keeps full access; revoking it soft-revokes).",
  examples: [false],
};

export const ApiKey = z.object({
  id: z.string().meta({ description: "The key's id (not the secret): use it to revoke the key.", examples: [KEY_ID] }),
  name: z
    .string()
    .nullable()
    .meta({ description: "What the key is for, as its creator named it.", examples: ["CI deploys"] }),
  key_prefix: z
    .string()
    .nullable()
    .meta({ description: "The first characters of the secret, to recognise a key in logs and lists.", examples: ["svc_live_4f9a"] }),
  scopes: z.array(Scope).meta(SCOPES_DOC),
  last_used_at: Timestamp.nullable().meta({ description: "When the key last authenticated a request; null when never.", examples: [EXAMPLE_INSTANT] }),
  expires_at: Timestamp.nullable().meta({ description: "When the key stops working; null when it never expires.", examples: [null] }),
  created_at: CreatedAt,
  legacy: z.boolean().meta(LEGACY_DOC),
});
export type ApiKey = z.infer<typeof ApiKey>;

export const CreatedApiKey = ApiKey.extend({
  key: z.string().meta({
    description: "The API key itself: shown only in this answer, store it now. Send it as `Authorization: Bearer <key>`.",
    examples: ["svc_live_4f9a…"],
  }),
});
export type CreatedApiKey = z.infer<typeof CreatedApiKey>;

export const CreateApiKeyBody = z.strictObject({
  name: StoredName.min(1)
    .max(200)
    .meta({ description: "A display name, unique where the resource says so.", examples: ["Launch"] }),
  scopes: z.array(Scope).min(1).optional().meta(SCOPES_DOC),
  test_mode: z
    .boolean()
    .optional()
    .meta({ description: "Mint a sandbox key (`svc_test_…`) instead of a live one.", examples: [false] }),
  expires_in_days: z
    .number()
    .int()
    .min(1)
    .max(365)
    .optional()
    .meta({ description: "Days until the key expires (1-365); never when absent.", examples: [30] }),
});
export type CreateApiKeyBody = z.infer<typeof CreateApiKeyBody>;

export const RevokedApiKey = z.object({
  id: z.string().meta({ description: "The revoked key's id.", examples: [KEY_ID] }),
  legacy: z.boolean().meta(LEGACY_DOC),
});

export const OrganizationIdParams = z.object({
  organization_id: OpaqueId.meta({ description: "The organization's id (the credential's own).", examples: ["org_3kTMd92jf7Qw1xYp8LmN2a"] }),
});
export const KeyIdParams = z.object({ key_id: OpaqueId.meta({ description: "The API key's id.", examples: [KEY_ID] }) });

export const EffectiveLimits = z.object({ organization_id: z.string(), plan: Plan, limits: Limits });

export const Jwk = z.record(z.string(), z.unknown());

export const keysRpc = {
  service: "keys",
  ops: {
    authenticateKey: { input: z.object({ key_hash: z.string().regex(/^[0-9a-f]{64}$/) }), output: Identity.nullable() },
    // Claims of a verified access token: signed, but still text that reaches Postgres.
    resolveMember: {
      input: z.object({ organization_id: Label, user_id: Label, credential_id: Label, scopes: z.array(Scope), expires_at: Timestamp }),
      output: Identity.nullable(),
    },
    devJwks: { input: z.object({}), output: z.object({ issuer: z.string(), keys: z.array(Jwk) }) },
    /** Which of the given users are members of the organization now (for other services checking assignees). */
    currentMembers: {
      input: z.object({ organization_id: Label, user_ids: z.array(Label).max(200) }),
      output: z.object({ user_ids: z.array(z.string()) }),
    },
    /** The emails of the given users, members or not (an export names former members too); unknown ids are absent. */
    userEmails: {
      input: z.object({ user_ids: z.array(Label).max(200) }),
      output: z.object({ users: z.array(z.object({ id: z.string(), email: z.string() })) }),
    },
    /** The members of the organization with these emails, compared ignoring case (imports map people by email). */
    membersByEmail: {
      input: z.object({ organization_id: Label, emails: z.array(Label.max(320)).max(200) }),
      output: z.object({ members: z.array(z.object({ email: z.string(), user_id: z.string() })) }),
    },
    listOrganizations: { input: PageQuery, output: page(Organization) },
    getOrganization: { input: OrganizationIdParams, output: Organization },
    listMembers: { input: PageQuery, output: page(Member) },
    getMember: { input: UserIdParams, output: Member },
    updateMember: { input: z.object({ ...UserIdParams.shape, ...UpdateMemberBody.shape }), output: Member },
    deleteMember: { input: UserIdParams, output: RemovedMember },
    createInvitation: { input: CreateInvitationBody, output: CreatedInvitation },
    listInvitations: { input: PageQuery, output: page(Invitation) },
    revokeInvitation: { input: InvitationIdParams, output: Invitation },
    /** No caller: the token is the whole authorization. */
    acceptInvitation: { input: AcceptInvitationBody, output: AcceptedInvitation },
    createApiKey: { input: CreateApiKeyBody, output: CreatedApiKey },
    listApiKeys: { input: PageQuery, output: page(ApiKey) },
    revokeApiKey: { input: KeyIdParams, output: RevokedApiKey },
    /** Owners and admins only; the reply's bytes are the events as stored, which are what was hashed. */
    listAuditEvents: { input: ListAuditEventsQuery, output: page(AuditEvent) },
    bootstrap: {
      input: z.object({
        org: OrganizationName,
        plan: Plan,
        email: Email,
        /** For a CI job run again: "reuse" answers the organization and owner already there, with a fresh owner key. */
        if_exists: z.enum(["refuse", "reuse"]).optional(),
      }),
      output: z.object({ organization_id: z.string(), user_id: z.string(), api_key: z.string() }),
    },
    /** The user's keys in the organization are revoked; the last owner stays. */
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
        webhook_endpoints: z.number().int().positive().optional(),
        // No replica has more connections than this (DATABASE_POOL_SIZE's most).
        scans: z.number().int().positive().max(200).optional(),
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
    ...oauthClientOps,
  },
} as const satisfies RpcCatalog;

export const KeysInvalidation = z.object({ organization_id: z.string() });
export function keysInvalidationSubject(namespace: string): string {
  return `${namespace}.evt.keys.invalidate`;
}

/** This call included. */
export const Usage = z.object({
  plan: Plan.meta(PLAN_DOC),
  period_start: Timestamp.meta({ description: "Start of the current billing period (UTC).", examples: ["2026-11-01T00:00:00.000Z"] }),
  period_end: Timestamp.meta({ description: "End of the current billing period (UTC): the allowance renews then.", examples: ["2026-12-01T00:00:00.000Z"] }),
  calls_used: z
    .number()
    .int()
    .meta({ description: "API calls counted in this billing period.", examples: [1234] }),
  calls_allowance: z
    .number()
    .int()
    .meta({ description: "API calls the plan allows per billing period.", examples: [1000000] }),
  burst: z
    .object({
      limit: z
        .number()
        .int()
        .meta({ description: "Requests a credential may make per window.", examples: [100] }),
      window_seconds: z
        .number()
        .int()
        .meta({ description: "The window's length in seconds.", examples: [1] }),
      remaining: z
        .number()
        .int()
        .meta({ description: "Requests left in the current window.", examples: [99] }),
      reset_at: Timestamp.meta({ description: "When the current window ends.", examples: [EXAMPLE_INSTANT] }),
    })
    .meta({
      description: "The per-credential burst limit now: requests allowed per window, left in this one, and when it resets.",
      examples: [{ limit: 100, window_seconds: 1, remaining: 99, reset_at: EXAMPLE_INSTANT }],
    }),
  storage_used: z
    .number()
    .int()
    .meta({ description: "Bytes of attachments stored, plus uploads started and not yet expired.", examples: [3145728] }),
  storage_allowance: z
    .number()
    .int()
    .meta({ description: "Bytes of attachments the plan allows.", examples: [10737418240] }),
  max_file_size: z
    .number()
    .int()
    .meta({ description: "The largest single attachment the plan allows, in bytes.", examples: [104857600] }),
  /** 0 without webhooks. */
  webhook_endpoints_allowance: z
    .number()
    .int()
    .meta({
      description: "Webhook endpoints the organization may have at once, enabled or not; 0 when the plan has no webhooks.",
      examples: [16],
    }),
});
export type Usage = z.infer<typeof Usage>;
