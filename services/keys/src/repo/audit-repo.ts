import type { AuditEvent, ListAuditEventsQuery, Page, RawJson } from "@tasksvc/contracts";
import { type Budgeted, DEFAULT_PAGE_BYTES, jsonb, keyset, keysetAfter, rawPageOf, type Sql, withinBudget } from "@tasksvc/db";

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
    /**
     * The heads of the organizations, locked until the transaction ends (appends to one
     * organization's chain go one batch at a time), and which of the events are already stored.
     * The lock is taken in organization order, so two replicas' batches wait rather than deadlock;
     * the stored ids are read after it, so they include every event appended before the lock was
     * granted. An organization's first event creates its head at the genesis hash.
     */
    async lockHeads(orgIds: readonly string[], eventIds: readonly string[], genesis: string): Promise<{ heads: Map<string, ChainHead>; stored: Set<string> }> {
      const orgs = [...new Set(orgIds)].sort();
      const lock = () => sql<{ organization_id: string; sequence: string; hash: string }[]>`
        select organization_id, sequence::text, hash from audit_heads
        where organization_id = any(${orgs}::text[]) order by organization_id for update`;
      const storedIds = () => sql<{ id: string }[]>`select id from audit_events where id = any(${[...eventIds]}::text[])`;
      // Sent together: the second statement's snapshot is taken once the first has its locks.
      let [rows, stored] = await Promise.all([lock(), storedIds()]);
      if (rows.length < orgs.length) {
        const have = new Set(rows.map((r) => r.organization_id));
        const missing = orgs.filter((o) => !have.has(o));
        await sql`
          insert into audit_heads (organization_id, sequence, hash)
          select o, 0, ${genesis} from unnest(${missing}::text[]) as o order by o
          on conflict do nothing`;
        [rows, stored] = await Promise.all([lock(), storedIds()]);
      }
      if (rows.length < orgs.length) throw new Error("a chain head was not found after its insert");
      return {
        heads: new Map(rows.map((r) => [r.organization_id, { sequence: Number(r.sequence), hash: r.hash }])),
        stored: new Set(stored.map((r) => r.id)),
      };
    },

    /** One statement: the events, and each organization's head moved to its last one. Only under lockHeads(). */
    async append(events: readonly StoredAuditEvent[], heads: ReadonlyMap<string, ChainHead>): Promise<void> {
      if (events.length === 0) return;
      const rows = events.map((e) => ({
        organization_id: e.organizationId,
        sequence: e.sequence,
        id: e.id,
        action: e.action,
        actor_id: e.actorId,
        target_id: e.targetId,
        created_at: e.createdAt,
        body: e.body,
      }));
      const moved = [...heads].map(([organization_id, h]) => ({ organization_id, sequence: h.sequence, hash: h.hash }));
      await sql`
        with appended as (
          insert into audit_events (organization_id, sequence, id, action, actor_id, target_id, created_at, body)
          select organization_id, sequence, id, action, actor_id, target_id, created_at, body
          from jsonb_to_recordset(${jsonb(sql, rows)}) as r (organization_id text, sequence bigint, id text, action text,
            actor_id text, target_id text, created_at timestamptz, body text)
        )
        update audit_heads a set sequence = h.sequence, hash = h.hash
        from jsonb_to_recordset(${jsonb(sql, moved)}) as h (organization_id text, sequence bigint, hash text)
        where a.organization_id = h.organization_id`;
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
