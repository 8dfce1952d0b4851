import type { TrashItem } from "@tasksvc/contracts";
import { taskId } from "@tasksvc/contracts";
import { type Budgeted, DEFAULT_PAGE_BYTES, KEYSET_TIME, keyset, keysetAfter, pageOf, type Sql, withinBudget } from "@tasksvc/db";
import { iso, TASK_COLUMNS, type TaskRow } from "./task-json.js";
import { stampColumns, type VersionStamp } from "./version-stamp.js";

export type TrashedRow = TaskRow & { deleted_at: Date; deleted_by: string; purge_at: Date; trash_root: string };

interface TrashItemRow {
  number: string;
  title: string;
  deleted_at: Date;
  purge_at: Date;
  deleted_by: string;
  cursor_at: string;
}

const TRASH_PAGES = keyset("desc", ["deleted_at", "timestamp"], ["number", "bigint"]);

/**
 * The trash: rows of tasks with `deleted_at` set. Every other read of tasks leaves them out; these
 * statements are the only ones that look at them (with the purge's).
 */
export function trashRepo(sql: Sql, pageBytes = DEFAULT_PAGE_BYTES) {
  const cols = sql.unsafe(`${TASK_COLUMNS}, deleted_by, purge_at, trash_root::text as trash_root`);
  const keysetTime = sql.unsafe(KEYSET_TIME);
  return {
    /**
     * The task and every live task below it, in the trash, root first. Rows are locked `for update`
     * first: a create or a move naming one of them as parent holds a key-share lock on it, so this
     * waits for it (and then sees the new subtask), or it waits for this and reads the row trashed.
     */
    async trashSubtree(org: string, root: number, by: string, retentionMs: number): Promise<TrashedRow[]> {
      const rows = await sql<(TrashedRow & { depth: number })[]>`
        with recursive sub(n, depth) as (
          select ${root}::bigint, 0
          union all
          select t.number, sub.depth + 1 from tasks t join sub on t.organization_id = ${org} and t.parent_number = sub.n
          where t.deleted_at is null
        ), locked as (
          select t.number, sub.depth from tasks t join sub on t.organization_id = ${org} and t.number = sub.n
          where t.deleted_at is null
          for update of t
        ), u as (
          update tasks t set deleted_at = now(), deleted_by = ${by}, purge_at = now() + ${retentionMs} * interval '1 millisecond',
            trash_root = ${root}
          from locked where t.organization_id = ${org} and t.number = locked.number
          returning t.*, locked.depth
        )
        select ${cols}, depth from u order by depth, number`;
      return rows;
    },

    /** A task in the trash whose erasure has not begun, locked; undefined otherwise. */
    async trashed(org: string, number: number): Promise<TrashedRow | undefined> {
      const [row] = await sql<TrashedRow[]>`
        select ${cols} from tasks
        where organization_id = ${org} and number = ${number} and deleted_at is not null and purge_at > now()
        for update`;
      return row;
    },

    /** Whether the task is in the trash (its erasure begun or not). */
    async inTrash(org: string, number: number): Promise<boolean> {
      const rows = await sql`select 1 from tasks where organization_id = ${org} and number = ${number} and deleted_at is not null`;
      return rows.length === 1;
    },

    /** Live or in the trash: the events feed's task filter keeps naming a task until it is erased. */
    async known(org: string, number: number): Promise<boolean> {
      const rows = await sql`select 1 from tasks where organization_id = ${org} and number = ${number}`;
      return rows.length === 1;
    },

    /** The task and the tasks below it that went to the trash with it (the same deletion), locked, root first. */
    async group(org: string, number: number, root: number): Promise<string[]> {
      const rows = await sql<{ number: string }[]>`
        with recursive sub(n, depth) as (
          select ${number}::bigint, 0
          union all
          select t.number, sub.depth + 1 from tasks t join sub on t.organization_id = ${org} and t.parent_number = sub.n
          where t.deleted_at is not null and t.trash_root = ${root}
        )
        select t.number::text as number from tasks t join sub on t.organization_id = ${org} and t.number = sub.n
        order by sub.depth, t.number
        for update of t`;
      return rows.map((r) => r.number);
    },

    /** Out of the trash, each a new version of the same content (`ids`: one version id per number, in order). */
    async restore(org: string, numbers: readonly string[], ids: readonly string[], by: VersionStamp): Promise<TaskRow[]> {
      const s = stampColumns(by);
      return sql<TaskRow[]>`
        with x as (
          select * from unnest(${numbers as string[]}::bigint[], ${ids as string[]}::text[]) with ordinality as x(number, version_id, ord)
        ), t as (
          update tasks t set deleted_at = null, deleted_by = null, purge_at = null, trash_root = null,
            current_version_id = x.version_id, version_count = version_count + 1, version = version + 1,
            updated_at = greatest(now(), updated_at + interval '1 microsecond')
          from x where t.organization_id = ${org} and t.number = x.number and t.deleted_at is not null
          returning t.*, x.ord
        ), v as (
          insert into task_versions (id, organization_id, task_number, seq, version, title, description, status, priority, start_date,
            due_date, notes, story_points, recurrence, project_ids, assignee_ids, label_ids, custom_fields, created_at,
            actor_type, actor_id, actor_user_id, request_id, batch_key)
          select current_version_id, organization_id, number, version_count, version, title, description, status, priority, start_date,
            due_date, notes, story_points, recurrence, project_ids, assignee_ids, label_ids, custom_fields, updated_at,
            ${s.actor_type}::text, ${s.actor_id}::text, ${s.actor_user_id}::text, ${s.request_id}::text, ${s.batch_key}::text from t
        )
        select ${sql.unsafe(TASK_COLUMNS)} from t order by ord`;
    },

    /** Newest deletion first; tasks whose erasure has begun are gone already as far as anyone can tell. */
    async list(org: string, limit: number, after: string | undefined) {
      const page = sql`
        select number::text as number, title, deleted_at, purge_at, deleted_by,
          to_char(deleted_at at time zone 'UTC', ${keysetTime}) as cursor_at, octet_length(title) + 200 as bytes
        from tasks
        where organization_id = ${org} and deleted_at is not null and purge_at > now()
          ${keysetAfter(sql, after, TRASH_PAGES)}
        order by deleted_at desc, number desc
        limit ${limit + 1}`;
      const rows = await sql<(TrashItemRow & Budgeted)[]>`${withinBudget(sql, page, "item.bytes", "item.deleted_at desc, item.number desc", pageBytes)}`;
      return pageOf(
        rows,
        limit,
        (r): TrashItem => ({
          id: taskId(r.number),
          title: r.title,
          deleted_at: iso(r.deleted_at),
          purge_at: iso(r.purge_at),
          deleted_by: r.deleted_by,
        }),
        (r) => [r.cursor_at, r.number],
      );
    },

    /** Erasure begins now for the task and every task below it (all in the trash): reads and restores treat them as gone. */
    async purgeNow(org: string, number: number): Promise<number[]> {
      const rows = await sql<{ number: string }[]>`
        with recursive sub(n) as (
          select ${number}::bigint
          union all
          select t.number from tasks t join sub on t.organization_id = ${org} and t.parent_number = sub.n
        )
        update tasks t set purge_at = least(purge_at, now())
        from sub where t.organization_id = ${org} and t.number = sub.n and t.deleted_at is not null
        returning t.number::text as number`;
      return rows.map((r) => Number(r.number));
    },
  };
}
export type TrashRepo = ReturnType<typeof trashRepo>;
