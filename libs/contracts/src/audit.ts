import { z } from "zod";
import { Actor } from "./actor.js";
import { EXAMPLE_INSTANT, OpaqueId, PageQuery, Timestamp } from "./common.js";

/** What the audit log records. */
export const AUDIT_ACTIONS = [
  "api_key.created",
  "api_key.revoked",
  "member.added",
  "member.role_changed",
  "member.removed",
  "invitation.created",
  "invitation.accepted",
  "invitation.revoked",
  "webhook_endpoint.created",
  "webhook_endpoint.updated",
  "webhook_endpoint.deleted",
  "webhook_endpoint.secret_rotated",
  "organization.plan_changed",
  "organization.limits_changed",
  "label.deleted",
  "custom_field.deleted",
  "export.created",
  "task.purged",
  "oauth_client.created",
  "oauth_client.deleted",
] as const;
export const AuditAction = z.enum(AUDIT_ACTIONS);
export type AuditAction = z.infer<typeof AuditAction>;

export const AUDIT_TARGET_TYPES = [
  "api_key",
  "member",
  "invitation",
  "webhook_endpoint",
  "organization",
  "label",
  "custom_field",
  "export",
  "task",
  "oauth_client",
] as const;
export const AuditTargetType = z.enum(AUDIT_TARGET_TYPES);
export type AuditTargetType = z.infer<typeof AuditTargetType>;

/** Kept one year; older events are swept, and the chain then starts at the oldest kept one. */
export const AUDIT_RETENTION_DAYS = 365;

/** 64 zeros: the `prev_hash` of an organization's first event. */
export const AUDIT_GENESIS_HASH = "0".repeat(64);

const AUDIT_EVENT_ID = "aud_4kQ8mT2pL7vX3nD9bR6sW1";
const HASH_EXAMPLE = "9f2c4e6a8b0d1f3e5a7c9b1d3f5e7a9c1b3d5f7e9a1c3b5d7f9e1a3c5b7d9f1e";

export const AuditTarget = z
  .object({
    type: AuditTargetType.meta({ description: "The kind of resource the action touched.", examples: ["api_key"] }),
    id: z.string().meta({ description: "The resource's `id` (a member's user id).", examples: ["key_2bN8xQ4mT7pL1vD9kR3sW6"] }),
  })
  .meta({ description: "What the action touched.", examples: [{ type: "api_key", id: "key_2bN8xQ4mT7pL1vD9kR3sW6" }] });
export type AuditTarget = z.infer<typeof AuditTarget>;

export const AuditChange = z.object({ from: z.unknown(), to: z.unknown() });
export const AuditChanges = z.record(z.string(), AuditChange);
export type AuditChanges = z.infer<typeof AuditChanges>;

/** Written by the service that made the change, in its transaction, and carried on the audit stream to the chain. */
export const AuditMessage = z.object({
  id: z.string().min(1),
  organization_id: z.string().min(1),
  action: AuditAction,
  actor: Actor,
  target: AuditTarget,
  changes: AuditChanges,
  request_id: z.string().nullable(),
  ip: z.string().nullable(),
  user_agent: z.string().nullable(),
  created_at: Timestamp,
});
export type AuditMessage = z.infer<typeof AuditMessage>;

const Hash = z.string().regex(/^[0-9a-f]{64}$/);

export const AuditEvent = z
  .object({
    id: z.string().meta({ description: "The event's id.", examples: [AUDIT_EVENT_ID] }),
    sequence: z
      .number()
      .int()
      .min(1)
      .meta({ description: "The event's place in the organization's audit log: 1, 2, 3 … with no gap.", examples: [42] }),
    action: AuditAction.meta({ description: "What was done.", examples: ["api_key.created"] }),
    actor: Actor.meta({
      description: "Who made the change: which credential, acting as which member; `system` for an administrator's command or the service's own work.",
      examples: [{ type: "api_key", id: "key_9vR3sW6bN8xQ4mT7pL1kD2", user_id: "usr_7hQ2mD9xK3pL5nB8vR4tW1" }],
    }),
    target: AuditTarget,
    changes: AuditChanges.meta({
      description:
        "Each field the action changed, with its value before (`from`) and after (`to`); null stands for none (a field of something created or removed). Never a secret.",
      examples: [{ role: { from: "member", to: "admin" } }],
    }),
    request_id: z
      .string()
      .nullable()
      .meta({
        description: "The id of the request that made the change (its `X-Request-Id`); null for the service's own work.",
        examples: ["req_8mT2pL7vX3nD9bR6sW1kQ4"],
      }),
    ip: z
      .string()
      .nullable()
      .meta({ description: "The address the request came from, as the gateway saw it; null when no HTTP request made the change.", examples: ["203.0.113.7"] }),
    user_agent: z
      .string()
      .nullable()
      .meta({ description: "The request's User-Agent (up to 512 characters); null when there was none.", examples: ["curl/8.5.0"] }),
    created_at: Timestamp.meta({ description: "When the change was committed (UTC, ISO 8601).", examples: [EXAMPLE_INSTANT] }),
    prev_hash: Hash.meta({
      description: "The `hash` of the event before it in the organization's log; 64 zeros for the first.",
      examples: ["0000000000000000000000000000000000000000000000000000000000000000"],
    }),
    hash: Hash.meta({
      description:
        "Lowercase hex SHA-256 of `prev_hash` followed directly by this event without its `hash` member, serialized by RFC 8785 (JSON Canonicalization Scheme): recompute it to check that no event was altered, removed or inserted.",
      examples: [HASH_EXAMPLE],
    }),
  })
  .meta({ description: "One entry of the organization's tamper-evident audit log." });
export type AuditEvent = z.infer<typeof AuditEvent>;

const AuditTime = z.iso.datetime({ offset: true });

/** `a,b` or the parameter repeated; any number of the known actions. */
const AuditActions = (() => {
  const list = z.array(AuditAction).min(1).max(AUDIT_ACTIONS.length);
  return z.union(
    [
      z
        .string()
        .transform((s) => s.split(","))
        .pipe(list),
      list,
    ],
    { error: `must be one or more of ${AUDIT_ACTIONS.join(", ")}, comma-separated` },
  );
})();

export const ListAuditEventsQuery = PageQuery.extend({
  action: AuditActions.optional().meta({
    description: "Only events of these actions, comma-separated (`member.added,member.removed`).",
    examples: ["api_key.created,api_key.revoked"],
  }),
  // An id the organization lacks simply matches nothing, so examples are safe to try.
  actor_id: OpaqueId.optional().meta({
    description: "Only events whose `actor.id` is this (an API key's, OAuth client's or user's id, `admin-cli` or `system`).",
    examples: ["key_9vR3sW6bN8xQ4mT7pL1kD2"],
  }),
  target_id: OpaqueId.optional().meta({ description: "Only events whose `target.id` is this.", examples: ["usr_7hQ2mD9xK3pL5nB8vR4tW1"] }),
  created_gte: AuditTime.optional().meta({ description: "Only events created at or after this time (ISO 8601).", examples: ["2026-11-01T00:00:00Z"] }),
  created_lt: AuditTime.optional().meta({ description: "Only events created before this time (ISO 8601).", examples: ["2026-12-01T00:00:00Z"] }),
}).strict();
export type ListAuditEventsQuery = z.output<typeof ListAuditEventsQuery>;

/** One stream for every service's audit events, deduplicated by event id. */
export const auditStream = (namespace: string) => `${namespace}_audit`;
export const auditSubject = (namespace: string, service: string) => `${namespace}.audit.${service}`;
export const auditSubjects = (namespace: string) => `${namespace}.audit.>`;
