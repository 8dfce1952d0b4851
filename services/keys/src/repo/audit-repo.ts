import type { AuditEvent, ListAuditEventsQuery, Page, RawJson } from "@tasksvc/contracts";
import { type Budgeted, DEFAULT_PAGE_BYTES, keyset, keysetAfter, rawPageOf, type Sql, withinBudget } from "@tasksvc/db";

export interface ChainHead {
  sequence: number;
  hash: string;
}

export interface StoredAuditEvent {
  organizationId: string;
  sequence: number;
  id: string;
  action: string;
  actorId: string;
  targetId: string;
  createdAt: string;
  body: string;
}

const AUDIT_PAGES = keyset("desc", ["sequence", "bigint"]);

/** The audit log: each organization's chain head and its events, stored as served. */
export function auditRepo(sql: Sql, pageBytes = DEFAULT_PAGE_BYTES) {
  return {
    /** Held until the transaction ends: appends to one organization's chain go one at a time. */
    async lockHead(orgId: string, genesis: string): Promise<ChainHead> {
      const head = () => sql<{ sequence: string; hash: string }[]>`
        select sequence::text, hash from audit_heads where organization_id = ${orgId} for update`;
      // The head exists after an organization's first event: one statement then, not an insert that conflicts every time.
      let [row] = await head();
      if (!row) {
        await sql`insert into audit_heads (organization_id, sequence, hash) values (${orgId}, 0, ${genesis}) on conflict do nothing`;
        [row] = await head();
      }
      if (!row) throw new Error("the chain head was not found after its insert");
      return { sequence: Number(row.sequence), hash: row.hash };
    },

    /**
     * One statement after lockHead(), so its snapshot sees every event stored before the lock was
     * granted: an event already stored (a redelivery) is neither appended again nor moves the head.
     */
    async appendUnlessStored(e: StoredAuditEvent, hash: string): Promise<"stored" | "duplicate"> {
      const [row] = await sql<{ duplicate: boolean }[]>`
        with dup as (
          select 1 from audit_events where id = ${e.id}
        ), appended as (
          insert into audit_events (organization_id, sequence, id, action, actor_id, target_id, created_at, body)
          select ${e.organizationId}, ${e.sequence}, ${e.id}, ${e.action}, ${e.actorId}, ${e.targetId}, ${e.createdAt}::timestamptz, ${e.body}
          where not exists (select 1 from dup)
          returning 1
        ), moved as (
          update audit_heads set sequence = ${e.sequence}, hash = ${hash}
          where organization_id = ${e.organizationId} and exists (select 1 from appended)
        )
        select exists (select 1 from dup) as duplicate`;
      return row?.duplicate ? "duplicate" : "stored";
    },

    async list(orgId: string, q: ListAuditEventsQuery): Promise<RawJson<Page<AuditEvent>>> {
      const page = sql`
        select sequence, sequence::text as cursor_sequence, body as json, octet_length(body) + 1 as bytes
        from audit_events
        where organization_id = ${orgId}
          ${q.action === undefined ? sql`` : sql`and action = any(${q.action}::text[])`}
          ${q.actor_id === undefined ? sql`` : sql`and actor_id = ${q.actor_id}`}
          ${q.target_id === undefined ? sql`` : sql`and target_id = ${q.target_id}`}
          ${q.created_gte === undefined ? sql`` : sql`and created_at >= ${q.created_gte}::timestamptz`}
          ${q.created_lt === undefined ? sql`` : sql`and created_at < ${q.created_lt}::timestamptz`}
          ${keysetAfter(sql, q.after, AUDIT_PAGES)}
        order by sequence desc
        limit ${q.limit + 1}`;
      const rows = await sql<
        ({ sequence: string; json: string } & Budgeted)[]
      >`${withinBudget(sql, page, "item.bytes", "item.sequence::bigint desc", pageBytes)}`;
      return rawPageOf<AuditEvent, { sequence: string; json: string }>(rows, q.limit, (r) => [r.sequence]);
    },

    /**
     * Deletes events older than the cutoff, at most `batch`, and only a prefix of each chain: an event
     * goes only when no kept event comes before it, so the oldest kept event's prev_hash anchors what is left.
     */
    async sweep(cutoff: Date, batch: number): Promise<number> {
      const rows = await sql`
        delete from audit_events d using (
          select e.organization_id, e.sequence from audit_events e
          where e.created_at < ${cutoff}
            and not exists (
              select 1 from audit_events k
              where k.organization_id = e.organization_id and k.sequence < e.sequence and k.created_at >= ${cutoff})
          order by e.created_at
          limit ${batch}
        ) old
        where d.organization_id = old.organization_id and d.sequence = old.sequence`;
      return rows.count;
    },
  };
}
export type AuditRepo = ReturnType<typeof auditRepo>;
