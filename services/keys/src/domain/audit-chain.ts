import { createHash } from "node:crypto";
import type { AuditEvent, AuditMessage } from "@tasksvc/contracts";
import canonicalize from "canonicalize";

/** The event as served, in this member order, without its hash. */
export function servedWithoutHash(m: AuditMessage, sequence: number, prevHash: string): Omit<AuditEvent, "hash"> {
  return {
    id: m.id,
    sequence,
    action: m.action,
    actor: { type: m.actor.type, id: m.actor.id, user_id: m.actor.user_id },
    target: { type: m.target.type, id: m.target.id },
    changes: m.changes,
    request_id: m.request_id,
    ip: m.ip,
    user_agent: m.user_agent,
    created_at: m.created_at,
    prev_hash: prevHash,
  };
}

/** Lowercase hex SHA-256 of the UTF-8 text `prev_hash` followed by the event without `hash`, serialized by RFC 8785. */
export function chainHash(prevHash: string, event: Omit<AuditEvent, "hash">): string {
  const canonical = canonicalize(event);
  if (canonical === undefined) throw new Error("an audit event has no canonical form");
  return createHash("sha256")
    .update(prevHash + canonical, "utf8")
    .digest("hex");
}

/** The stored text is exactly what is served, so a client hashes what was hashed. */
export function sealedEvent(m: AuditMessage, sequence: number, prevHash: string): { hash: string; body: string } {
  const event = servedWithoutHash(m, sequence, prevHash);
  const hash = chainHash(prevHash, event);
  return { hash, body: JSON.stringify({ ...event, hash } satisfies AuditEvent) };
}
