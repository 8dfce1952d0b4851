import type { Recurrence, TaskStatus } from "@tasksvc/contracts";
import { jsonb, type Sql } from "@tasksvc/db";

export interface HeadRow {
  organization_id: string;
  number: string;
  owner_user_id: string;
  recurrence: Recurrence;
  created_at: Date;
  seen: string;
  last_slot: string | null;
  made: number;
  latest_status: TaskStatus;
  latest_updated_at: Date;
  latest_archived_at: Date | null;
  latest_number: string;
  latest_archived: boolean;
  latest_due: string | null;
}

export function recurrenceRepo(sql: Sql) {
  return {
    /** `seen` is the head row's xmin, for wakeAt. */
    async heads(now: Date): Promise<HeadRow[]> {
      return sql<HeadRow[]>`
        select t.organization_id, t.number::text as number, t.owner_user_id, t.recurrence, t.created_at, t.xmin::text as seen,
          s.last_slot, s.made, coalesce(o.status, t.status) as latest_status, coalesce(o.updated_at, t.updated_at) as latest_updated_at,
          o.archived_at as latest_archived_at,
          coalesce(o.number, t.number)::text as latest_number, coalesce(o.archived, false) as latest_archived,
          to_char((case when o.number is null then t.due_date else o.due_date end) at time zone 'UTC', 'YYYY-MM-DD') as latest_due
        from tasks t
        cross join lateral (
          select max(slot)::text as last_slot, count(*)::int as made from recurrence_slots rs
          where rs.organization_id = t.organization_id and rs.head_number = t.number
        ) s
        left join lateral (
          select x.status, x.updated_at, x.number, x.archived, x.archived_at, x.due_date from recurrence_slots rs
          join tasks x on x.organization_id = rs.organization_id and x.number = rs.task_number
          where rs.organization_id = t.organization_id and rs.head_number = t.number
          order by rs.slot desc limit 1
        ) o on true
        where t.recurrence is not null and not t.archived and t.recurrence_wake <= ${now} and t.deleted_at is null`;
    },

    /**
     * Only if the row is as the scheduler read it (its xmin): a head changed meanwhile is read again on
     * the next tick. Rows another transaction holds are skipped, so this never waits for a user's write.
     */
    async wakeAt(items: Array<{ org: string; number: number; seen: string; wake: Date }>): Promise<void> {
      if (items.length === 0) return;
      const input = items.map((i) => ({ org: i.org, number: i.number, seen: i.seen, wake: i.wake.toISOString() }));
      await sql`
        with x as (
          select * from jsonb_to_recordset(${jsonb(sql, input)}) as x(org text, number bigint, seen text, wake timestamptz)
        ), free as (
          select t.organization_id, t.number, x.wake from tasks t join x on t.organization_id = x.org and t.number = x.number
          where t.xmin = x.seen::xid
          for update of t skip locked
        )
        update tasks t set recurrence_wake = free.wake from free
        where t.organization_id = free.organization_id and t.number = free.number`;
    },

    /**
     * Fewer when a slot was recorded already, or its series has one after `after`, so an occurrence
     * decided on a stale read never lands beside a newer one. Exact because every maker holds the
     * organization's number counter to the commit; in head order, so overlapping sets never deadlock.
     */
    async recordSlots(org: string, items: Array<{ head: number; slot: string; task: number; after: string | null }>): Promise<number> {
      if (items.length === 0) return 0;
      const rows = await sql`
        insert into recurrence_slots (organization_id, head_number, slot, task_number)
        select ${org}, head, slot, task
        from unnest(${items.map((i) => i.head)}::bigint[], ${items.map((i) => i.slot)}::date[], ${items.map((i) => i.task)}::bigint[],
          ${items.map((i) => i.after)}::date[]) as x(head, slot, task, after)
        where not exists (
          select 1 from recurrence_slots rs
          where rs.organization_id = ${org} and rs.head_number = x.head and (x.after is null or rs.slot > x.after))
        order by head, slot
        on conflict do nothing
        returning 1`;
      return rows.length;
    },

    async seriesSlots(org: string, head: number): Promise<{ last_slot: string | null; made: number }> {
      const [row] = await sql<{ last_slot: string | null; made: number }[]>`
        select max(slot)::text as last_slot, count(*)::int as made from recurrence_slots
        where organization_id = ${org} and head_number = ${head}`;
      return row ?? { last_slot: null, made: 0 };
    },

    /** A cheap check before making them. */
    async slotsTaken(org: string, items: Array<{ head: number; slot: string }>): Promise<Set<string>> {
      if (items.length === 0) return new Set();
      const rows = await sql<{ key: string }[]>`
        select rs.head_number::text || '/' || rs.slot::text as key
        from unnest(${items.map((i) => i.head)}::bigint[], ${items.map((i) => i.slot)}::date[]) as x(head, slot)
        join recurrence_slots rs on rs.organization_id = ${org} and rs.head_number = x.head and rs.slot = x.slot`;
      return new Set(rows.map((r) => r.key));
    },
  };
}
export type RecurrenceRepo = ReturnType<typeof recurrenceRepo>;
