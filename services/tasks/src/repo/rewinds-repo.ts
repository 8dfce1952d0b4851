import { REWIND_ITEMS_BYTES, REWIND_MAX_ITEMS, type Rewind, type RewindItem, type RewindMatch } from "@tasksvc/contracts";
import { type Budgeted, jsonb, type Sql, withinBudget } from "@tasksvc/db";
import type { ContentColumns, TaskRow } from "./task-json.js";

/** A rewind's match with `until` resolved when it was made, as stored. */
export interface StoredMatch {
  credential_id: string | null;
  request_id: string | null;
  batch_key: string | null;
  since: Date;
  until: Date;
}

export interface RewindRow extends StoredMatch {
  id: string;
  organization_id: string;
  requested_by: string;
  dry_run: boolean;
  status: Rewind["status"];
  error: string | null;
  published: number;
  created_at: Date;
  completed_at: Date | null;
}

export type VersionRow = ContentColumns & { task_number: string; seq: number; matches: boolean };

/** Whether version `v` is one of the match's writes; each equality names a column one of the version indexes leads with. */
function matching(sql: Sql, m: StoredMatch) {
  return sql`(v.created_at >= ${m.since} and v.created_at < ${m.until}
    ${m.credential_id === null ? sql`` : sql`and v.actor_id = ${m.credential_id}`}
    ${m.request_id === null ? sql`` : sql`and v.request_id = ${m.request_id}`}
    ${m.batch_key === null ? sql`` : sql`and v.batch_key = ${m.batch_key}`})`;
}

export const matchOf = (r: StoredMatch): RewindMatch => ({
  ...(r.credential_id === null ? {} : { credential_id: r.credential_id }),
  ...(r.request_id === null ? {} : { request_id: r.request_id }),
  ...(r.batch_key === null ? {} : { batch_key: r.batch_key }),
  since: r.since.toISOString(),
  until: r.until.toISOString(),
});

export function rewindsRepo(sql: Sql) {
  return {
    async insert(r: Omit<RewindRow, "published" | "created_at" | "completed_at" | "error">): Promise<void> {
      await sql`
        insert into rewinds (id, organization_id, requested_by, credential_id, request_id, batch_key, since, until, dry_run, status)
        values (${r.id}, ${r.organization_id}, ${r.requested_by}, ${r.credential_id}, ${r.request_id}, ${r.batch_key}, ${r.since}, ${r.until},
          ${r.dry_run}, ${r.status})`;
      // A running one is leased to the job just queued; a finished one is complete at once.
      await sql`update rewinds set ${r.status === "running" ? sql`lease_until = now() + interval '2 minutes'` : sql`completed_at = now()`} where id = ${r.id}`;
    },

    /** Held to the commit, so two requests cannot both take the organization's last place. */
    async running(org: string): Promise<number> {
      await sql`select pg_advisory_xact_lock(hashtextextended(${`tasks.rewinds:${org}`}, 0))`;
      const [row] = await sql<{ n: number }[]>`select count(*)::int as n from rewinds where organization_id = ${org} and status = 'running'`;
      return row?.n ?? 0;
    },

    async get(org: string, id: string, lock = false): Promise<RewindRow | undefined> {
      const [row] = await sql<RewindRow[]>`
        select * from rewinds where organization_id = ${org} and id = ${id} ${lock ? sql`for update` : sql``}`;
      return row;
    },

    /** The tasks the match's writes changed, each with the seq of its first matching version, by number; `limit` bounds the answer. */
    async matchedTasks(org: string, m: StoredMatch, limit: number): Promise<{ number: number; first: number }[]> {
      const rows = await sql<{ number: string; first: number }[]>`
        select v.task_number::text as number, min(v.seq) as first from task_versions v
        where v.organization_id = ${org} and ${matching(sql, m)}
        group by v.task_number order by v.task_number desc limit ${limit}`;
      return rows.map((r) => ({ number: Number(r.number), first: r.first }));
    },

    /** Each task's versions from the one before its first matching write, oldest first, each saying whether it matches. */
    async versionsFrom(org: string, m: StoredMatch, tasks: readonly { number: number; first: number }[]): Promise<VersionRow[]> {
      if (tasks.length === 0) return [];
      return sql<VersionRow[]>`
        select v.task_number::text as task_number, v.seq, v.title, v.description, v.status, v.priority, v.start_date, v.due_date, v.notes,
          v.story_points::text as story_points, v.recurrence, v.project_ids, v.assignee_ids, v.label_ids, v.custom_fields,
          ${matching(sql, m)} as matches
        from unnest(${tasks.map((t) => t.number)}::bigint[], ${tasks.map((t) => t.first)}::int[]) as f(n, first)
        join task_versions v on v.organization_id = ${org} and v.task_number = f.n and v.seq >= f.first - 1
        order by v.task_number, v.seq`;
    },

    /**
     * The tasks' rows, trashed ones too (locked inside an undo, so the plan holds until the commit),
     * locked in the order of their numbers (the output column `number` is text: 10 came before 9).
     */
    async rows(org: string, numbers: readonly number[], lock: boolean): Promise<(TaskRow & { in_trash: boolean })[]> {
      if (numbers.length === 0) return [];
      return sql<(TaskRow & { in_trash: boolean })[]>`
        select number::text as number, owner_user_id, parent_number::text as parent_number, archived, current_version_id, version_count,
          version, title, description, status, priority, start_date, due_date, notes, story_points::text as story_points, recurrence,
          project_ids, assignee_ids, label_ids, custom_fields, series_head::text as series_head, series_slot::text as series_slot,
          created_at, updated_at, '' as cursor_at, deleted_at is not null as in_trash
        from tasks where organization_id = ${org} and number = any(${numbers}::bigint[])
        order by tasks.number ${lock ? sql`for no key update` : sql``}`;
    },

    /** Of the tasks, those with a live subtask that no write of the match created. */
    async withOtherSubtasks(org: string, m: StoredMatch, numbers: readonly number[]): Promise<Set<number>> {
      if (numbers.length === 0) return new Set();
      const rows = await sql<{ parent: string }[]>`
        select distinct s.parent_number::text as parent from tasks s
        join task_versions v on v.organization_id = s.organization_id and v.task_number = s.number and v.seq = 1
        where s.organization_id = ${org} and s.parent_number = any(${numbers}::bigint[]) and s.deleted_at is null and not ${matching(sql, m)}`;
      return new Set(rows.map((r) => Number(r.parent)));
    },

    /** Of these tasks, those the rewind already did (or planned). */
    async done(id: string, numbers: readonly number[]): Promise<Set<number>> {
      const rows = await sql<{ n: string }[]>`
        select task_number::text as n from rewind_items where rewind_id = ${id} and task_number = any(${numbers}::bigint[])`;
      return new Set(rows.map((r) => Number(r.n)));
    },

    async addItems(id: string, items: readonly { number: number; item: RewindItem }[]): Promise<void> {
      if (items.length === 0) return;
      const input = items.map((i) => ({ n: i.number, action: i.item.action, item: i.item }));
      await sql`
        insert into rewind_items (rewind_id, task_number, action, item)
        select ${id}, x.n, x.action, x.item from jsonb_to_recordset(${jsonb(sql, input)}) as x(n bigint, action text, item jsonb)
        on conflict do nothing`;
    },

    /** The first items by task number within the answer's bounds, and the counts of all. */
    async view(r: RewindRow): Promise<Rewind> {
      const page = sql`select task_number, item, octet_length(item::text) as bytes from rewind_items where rewind_id = ${r.id}
        order by task_number limit ${REWIND_MAX_ITEMS + 1}`;
      const rows = await sql<({ item: RewindItem } & Budgeted)[]>`${withinBudget(sql, page, "item.bytes", "item.task_number", REWIND_ITEMS_BYTES)}`;
      const [c] = await sql<{ reverted: number; trashed: number; skipped: number }[]>`
        select count(*) filter (where action = 'revert')::int as reverted, count(*) filter (where action = 'trash')::int as trashed,
          count(*) filter (where action = 'skip')::int as skipped
        from rewind_items where rewind_id = ${r.id}`;
      const kept = rows.filter((x, i) => i < REWIND_MAX_ITEMS && x.fits);
      const counts = c ?? { reverted: 0, trashed: 0, skipped: 0 };
      return {
        id: r.id,
        status: r.status,
        dry_run: r.dry_run,
        match: matchOf(r),
        items: kept.map((x) => x.item),
        items_truncated: kept.length < counts.reverted + counts.trashed + counts.skipped,
        counts,
        error: r.error,
        created_at: r.created_at.toISOString(),
        completed_at: r.completed_at === null ? null : r.completed_at.toISOString(),
      };
    },

    async finish(id: string, status: "succeeded" | "failed", error: string | null): Promise<void> {
      await sql`update rewinds set status = ${status}, error = ${error}, completed_at = now(), lease_until = null where id = ${id}`;
    },

    async lease(id: string, ms: number): Promise<void> {
      await sql`update rewinds set lease_until = now() + ${ms} * interval '1 millisecond' where id = ${id}`;
    },

    /** Running rewinds whose run has not shown life for a while: their job is published again. */
    async stalled(limit: number): Promise<{ id: string; organization_id: string; published: number }[]> {
      return sql`
        update rewinds set published = published + 1, lease_until = now() + interval '2 minutes'
        where id in (select id from rewinds where status = 'running' and (lease_until is null or lease_until < now()) limit ${limit})
        returning id, organization_id, published`;
    },
  };
}
export type RewindsRepo = ReturnType<typeof rewindsRepo>;
