import { AUDIT_GENESIS_HASH, AUDIT_RETENTION_DAYS, type AuditMessage, type Caller, type ListAuditEventsQuery } from "@tasksvc/contracts";
import { deleteInBatches, type Database, scanGate, type Sql } from "@tasksvc/db";
import { AppError } from "@tasksvc/errors";
import { auditRepo, type ChainHead, type StoredAuditEvent } from "../repo/audit-repo.js";
import type { KeysResources } from "./resources.js";
import { sealedEvent } from "./audit-chain.js";

const DAY_MS = 86_400_000;
const LIST_SCAN = { operation: "audit log page", narrow: "narrow it with action, actor_id, target_id, or created_gte and created_lt" };
const SWEEP_BATCH = 1000;

/**
 * Events in the order given, in the transaction `t`: each organization's run of them numbered and
 * chained from its locked head. A redelivered event is found stored and skipped. The chain
 * consumer's batches and the keys service's own outbox both come here.
 */
export async function chainIn(t: Sql, ms: readonly AuditMessage[]): Promise<("stored" | "duplicate")[]> {
  const r = auditRepo(t);
  const { heads, stored } = await r.lockHeads(
    ms.map((m) => m.organization_id),
    ms.map((m) => m.id),
    AUDIT_GENESIS_HASH,
  );
  const moved = new Map<string, ChainHead>();
  const appended: StoredAuditEvent[] = [];
  const out = ms.map((m) => {
    if (stored.has(m.id)) return "duplicate" as const;
    stored.add(m.id);
    const head = moved.get(m.organization_id) ?? heads.get(m.organization_id);
    if (!head) throw new Error(`no chain head for organization ${m.organization_id}`);
    const sequence = head.sequence + 1;
    const { hash, body } = sealedEvent(m, sequence, head.hash);
    moved.set(m.organization_id, { sequence, hash });
    appended.push({
      organizationId: m.organization_id,
      sequence,
      id: m.id,
      action: m.action,
      actorId: m.actor.id,
      targetId: m.target.id,
      createdAt: m.created_at,
      body,
    });
    return "stored" as const;
  });
  await r.append(appended, moved);
  return out;
}

/**
 * The audit log's one writer: the chain consumer stores events under their organizations' head
 * locks, so replicas consuming at once still number without gap and link each hash to the one before.
 */
export function auditSystem(db: Pick<Database, "sql" | "tx" | "connections">, res: Pick<KeysResources, "repo">, o: { pageBytes?: number | undefined } = {}) {
  const repo = auditRepo(db.sql, o.pageBytes);
  // A year of a large organization's log is a long scan: it takes at most its share of the connections.
  const scans = scanGate({ service: "keys", connections: db.connections });
  return {
    /** chainIn() in a transaction of its own; the consumer acks after the commit, so a crash only brings events back. */
    storeAll(ms: readonly AuditMessage[]): Promise<("stored" | "duplicate")[]> {
      return db.tx((t) => chainIn(t, ms));
    },

    /** Whatever the credential's scopes, the user it acts as must be an owner or admin now. */
    async list(c: Caller, q: ListAuditEventsQuery) {
      const role = (await res.repo.member(c.organizationId, c.userId))?.role;
      if (role !== "owner" && role !== "admin") {
        throw new AppError(
          "insufficient_scope",
          `Reading the audit log requires an owner or admin membership; the calling user is ${role ? `a ${role}` : "not a member"}.`,
        );
      }
      return scans.run(c.organizationId, c.deadline, LIST_SCAN, () => repo.list(c.organizationId, q));
    },

    /** Bounded batches, each its own statement. */
    sweep(now = new Date()): Promise<number> {
      const cutoff = new Date(now.getTime() - AUDIT_RETENTION_DAYS * DAY_MS);
      return deleteInBatches(SWEEP_BATCH, () => repo.sweep(cutoff, SWEEP_BATCH));
    },
  };
}
export type AuditSystem = ReturnType<typeof auditSystem>;
