import { AUDIT_GENESIS_HASH, AUDIT_RETENTION_DAYS, type AuditMessage, type Caller, type ListAuditEventsQuery } from "@tasksvc/contracts";
import { deleteInBatches, type Database, scanGate } from "@tasksvc/db";
import { AppError } from "@tasksvc/errors";
import { auditRepo } from "../repo/audit-repo.js";
import type { KeysResources } from "./resources.js";
import { sealedEvent } from "./audit-chain.js";

const DAY_MS = 86_400_000;
const LIST_SCAN = { operation: "audit log page", narrow: "narrow it with action, actor_id, target_id, or created_gte and created_lt" };
const SWEEP_BATCH = 1000;

/**
 * The audit log's one writer: the chain consumer stores each event under its organization's head
 * lock, so replicas consuming at once still number without gap and link each hash to the one before.
 */
export function auditSystem(db: Pick<Database, "sql" | "tx" | "connections">, res: Pick<KeysResources, "repo">, o: { pageBytes?: number | undefined } = {}) {
  const repo = auditRepo(db.sql, o.pageBytes);
  // A year of a large organization's log is a long scan: it takes at most its share of the connections.
  const scans = scanGate({ service: "keys", connections: db.connections });
  return {
    /** A redelivered event is found stored and skipped; the ack comes after the commit, so a crash only brings it back. */
    async store(m: AuditMessage): Promise<"stored" | "duplicate"> {
      return db.tx(async (t) => {
        const r = auditRepo(t);
        const head = await r.lockHead(m.organization_id, AUDIT_GENESIS_HASH);
        const sequence = head.sequence + 1;
        const { hash, body } = sealedEvent(m, sequence, head.hash);
        const e = {
          organizationId: m.organization_id,
          sequence,
          id: m.id,
          action: m.action,
          actorId: m.actor.id,
          targetId: m.target.id,
          createdAt: m.created_at,
          body,
        };
        return r.appendUnlessStored(e, hash);
      });
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
