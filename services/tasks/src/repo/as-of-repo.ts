import type { Page, Task, TaskStatus } from "@tasksvc/contracts";
import { type Budgeted, cancelAt, DEFAULT_PAGE_BYTES, KEYSET_TIME, keyset, keysetAfter, pageOf, type Sql, withinBudget } from "@tasksvc/db";
import { type TaskRow, toTask } from "./task-json.js";

/**
 * Tasks as they stood at an instant, from their immutable versions (decision 0047): the content is
 * the latest version written at or before it; `archived`, the parent and the series are the task
 * row's now, as versions do not record them. A task in the trash now is left out, as every read does.
 */
const VERSION_COLUMNS = `v.id as current_version_id, v.seq as version_count, v.version, v.title, v.description, v.status, v.priority,
  v.start_date, v.due_date, v.notes, v.story_points::text as story_points, v.recurrence, v.project_ids, v.assignee_ids, v.label_ids,
  v.custom_fields, v.created_at as updated_at, v.task_number, to_char(v.created_at at time zone 'UTC', ${KEYSET_TIME}) as cursor_at`;
const TASK_ROW_COLUMNS = `t.number::text as number, t.owner_user_id, t.parent_number::text as parent_number, t.archived,
  t.series_head::text as series_head, t.series_slot::text as series_slot, t.created_at`;

const NEWEST_FIRST = keyset("desc", ["v.created_at", "timestamp"], ["v.task_number", "bigint"]);
const OLDEST_FIRST = keyset("asc", ["v.created_at", "timestamp"], ["v.task_number", "bigint"]);

export interface AsOfListQuery {
  asOf: string;
  archived: boolean;
  status?: TaskStatus[] | undefined;
  projectId?: string | undefined;
  desc: boolean;
  limit: number;
  after?: string | undefined;
  until?: number | undefined;
}

type AsOfRow = TaskRow & Budgeted & { task_number: string };

export function asOfRepo(sql: Sql, pageBytes = DEFAULT_PAGE_BYTES) {
  const versionCols = sql.unsafe(VERSION_COLUMNS);
  const taskCols = sql.unsafe(TASK_ROW_COLUMNS);
  return {
    /** Undefined when the task did not exist yet at the instant, is in the trash or was erased. */
    async get(org: string, number: number, asOf: string): Promise<Task | undefined> {
      const [row] = await sql<TaskRow[]>`
        select ${taskCols}, ${versionCols}
        from tasks t
        join lateral (
          select * from task_versions v
          where v.organization_id = t.organization_id and v.task_number = t.number and v.created_at <= ${asOf}::timestamptz
          order by v.seq desc limit 1
        ) v on true
        where t.organization_id = ${org} and t.number = ${number} and t.deleted_at is null`;
      return row === undefined ? undefined : toTask(row);
    },

    /**
     * Walks the versions from the instant down (or up to it), keeping each task's latest one at the
     * instant: a version is kept when no later version of its task was written by then. The work per
     * page is the page's versions and the superseded ones between them; the scan gate's deadline ends a
     * walk that finds too few.
     */
    async list(org: string, q: AsOfListQuery): Promise<Page<Task>> {
      const status = q.status === undefined ? sql`` : sql`and v.status = any(${q.status}::text[])`;
      const project = q.projectId === undefined ? sql`` : sql`and v.project_ids @> array[${q.projectId}]::text[]`;
      const dir = sql.unsafe(q.desc ? "desc" : "asc");
      const page = sql`
        select ${taskCols}, ${versionCols}, octet_length(row_to_json(v)::text) + 200 as bytes
        from task_versions v
        join tasks t on t.organization_id = v.organization_id and t.number = v.task_number
        where v.organization_id = ${org} and v.created_at <= ${q.asOf}::timestamptz
          ${keysetAfter(sql, q.after, q.desc ? NEWEST_FIRST : OLDEST_FIRST)}
          and not exists (
            select 1 from task_versions w
            where w.organization_id = v.organization_id and w.task_number = v.task_number and w.seq > v.seq and w.created_at <= ${q.asOf}::timestamptz)
          and t.deleted_at is null and t.archived = ${q.archived}
          ${status} ${project}
        order by v.created_at ${dir}, v.task_number ${dir}
        limit ${q.limit + 1}`;
      const order = q.desc ? "item.updated_at desc, item.task_number desc" : "item.updated_at asc, item.task_number asc";
      const rows = await cancelAt(sql<AsOfRow[]>`${withinBudget(sql, page, "item.bytes", order, pageBytes)}`, q.until);
      return pageOf(rows, q.limit, toTask, (r) => [r.cursor_at, r.task_number]);
    },
  };
}
export type AsOfRepo = ReturnType<typeof asOfRepo>;
