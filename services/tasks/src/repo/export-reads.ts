import type { Comment } from "@tasksvc/contracts";
import { type Budgeted, type Sql, withinBudget } from "@tasksvc/db";
import { type CommentRow, toComment } from "./comments-repo.js";
import { shownCustomSql } from "./task-fields.js";
import { TASK_COLUMNS, TASK_JSON, TASK_JSON_REENCODE, type TaskRow, versionJsonReencodeSql, versionJsonSql } from "./task-json.js";

/**
 * The one place where an export leaves out the tasks in the trash, as SQL on a task row named `t`:
 * every read below (tasks, their versions, dependencies, comments and the counts) follows it. A
 * trashed task's subtasks are in the trash with it, so no exported task has a parent left out.
 */
export const NOT_IN_TRASH = "t.deleted_at is null";

/** A statement reads at most this many rows' worth of free text (titles, notes, bodies), so no chunk holds much in memory. */
export const CHUNK_BYTES = 1024 * 1024;

/**
 * One object of the file as Postgres writes it: `json` is byte for byte what JSON.stringify writes
 * for the API's object once the rows marked `reencode` go through compactJson (jsonb spaces its
 * nested objects); `users` are the people it names, who get member lines.
 */
export interface ExportLine {
  json: string;
  reencode: boolean;
  users: string[];
}

export interface Numbered {
  number: number;
  /** The task's free text in bytes, read from the values' headers. */
  bytes: number;
}

/**
 * Reads of an export, each one statement of bounded size on the snapshot's transaction: keyset
 * chunks, never OFFSET, and no statement that grows with the organization.
 */
export function exportReads(sql: Sql) {
  const cols = sql.unsafe(TASK_COLUMNS);
  // A row's size from its values' headers, never by rendering it: measuring a version as JSON cost
  // an export more than reading it. The stored size of the JSON and array columns (compressed when
  // large) is close enough for a bound on memory; 256 stands for the fixed columns.
  const VERSION_BYTES = sql.unsafe(
    "(256 + octet_length(v.title) + coalesce(octet_length(v.description), 0) + coalesce(octet_length(v.notes), 0) + coalesce(pg_column_size(v.custom_fields), 0) + coalesce(pg_column_size(v.recurrence), 0) + coalesce(pg_column_size(v.project_ids), 0) + coalesce(pg_column_size(v.assignee_ids), 0) + coalesce(pg_column_size(v.label_ids), 0) + coalesce(octet_length(v.actor_id), 0) + coalesce(octet_length(v.actor_user_id), 0))",
  );
  const COMMENT_BYTES = sql.unsafe("(256 + octet_length(c.body) + coalesce(pg_column_size(c.mention_ids), 0))");
  const taskJson = sql.unsafe(TASK_JSON);
  const taskReencode = sql.unsafe(TASK_JSON_REENCODE);
  const versionJson = sql.unsafe(versionJsonSql("v.", "t."));
  const versionReencode = sql.unsafe(versionJsonReencodeSql("v."));
  /** The owner, the assignees and the values of the `user` fields named by userKeys. */
  const usersOf = (x: string, custom: string, userKeys: readonly string[], owner = `${x}owner_user_id`) =>
    sql`(array[${sql.unsafe(owner)}] || ${sql.unsafe(`${x}assignee_ids`)} || array(select ${sql.unsafe(custom)} ->> k from unnest(${userKeys as string[]}::text[]) k
      where jsonb_typeof(${sql.unsafe(custom)} -> k) = 'string'))`;
  const live = sql.unsafe(NOT_IN_TRASH);
  // `from`: the chunk's first task number, also said of the tasks side. Without it the planner may
  // merge-join from the organization's first task at every chunk: at a million tasks, 2 s a chunk.
  const liveTask = (org: string, number: ReturnType<typeof sql.unsafe>, from = 0) =>
    sql`exists (select 1 from tasks t where t.organization_id = ${org} and t.number = ${number} and t.number >= ${from}::bigint and ${live})`;
  return {
    /** Counted once, at the start: the export's progress total. */
    async taskCount(org: string): Promise<number> {
      const [row] = await sql<{ n: string }[]>`select count(*)::text as n from tasks t where t.organization_id = ${org} and ${live}`;
      return Number(row?.n ?? 0);
    },

    /** The highest task number (task numbers have no gaps but may have holes in the trash). */
    async lastNumber(org: string): Promise<number> {
      const [row] = await sql<{ n: string | null }[]>`select max(number)::text as n from tasks where organization_id = ${org}`;
      return Number(row?.n ?? 0);
    },

    async anySubtask(org: string): Promise<boolean> {
      const rows = await sql`select 1 from tasks where organization_id = ${org} and parent_number is not null limit 1`;
      return rows.length === 1;
    },

    /**
     * The tasks numbered in [from, to) that are `depth` levels below a top-level task, in number
     * order. Each walks up at most `depth` parents, so a window of W numbers costs at most W × depth
     * lookups on the primary key, however deep or wide the organization's trees are.
     */
    async atDepth(org: string, depth: number, from: number, to: number): Promise<Numbered[]> {
      const bytes = sql.unsafe("(octet_length(t.title) + coalesce(octet_length(t.description), 0) + coalesce(octet_length(t.notes), 0))");
      const rows =
        depth === 0
          ? await sql<{ number: string; bytes: number }[]>`
              select t.number::text as number, ${bytes} as bytes from tasks t
              where t.organization_id = ${org} and t.number >= ${from} and t.number < ${to} and t.parent_number is null and ${live}
              order by t.number`
          : await sql<{ number: string; bytes: number }[]>`
              with recursive up(n, above, k) as (
                select t.number, t.parent_number, 1 from tasks t
                where t.organization_id = ${org} and t.number >= ${from} and t.number < ${to} and t.parent_number is not null and ${live}
                union all
                select up.n, p.parent_number, up.k + 1 from up join tasks p on p.organization_id = ${org} and p.number = up.above
                where up.k < ${depth} and p.parent_number is not null
              )
              select t.number::text as number, ${bytes} as bytes
              from up join tasks top on top.organization_id = ${org} and top.number = up.above
              join tasks t on t.organization_id = ${org} and t.number = up.n
              where up.k = ${depth} and top.parent_number is null
              order by t.number`;
      return rows.map((r) => ({ number: Number(r.number), bytes: r.bytes }));
    },

    /** Rows as GET /v1/tasks/{id} renders them, in number order. */
    async tasks(org: string, numbers: readonly number[]): Promise<TaskRow[]> {
      if (numbers.length === 0) return [];
      return sql<
        TaskRow[]
      >`select ${cols} from tasks t where t.organization_id = ${org} and t.number = any(${numbers as number[]}::bigint[]) order by t.number`;
    },

    /** JSON lines of tasks, built by Postgres (see ExportLine), in number order. */
    async taskLines(org: string, numbers: readonly number[], userKeys: readonly string[]): Promise<ExportLine[]> {
      if (numbers.length === 0) return [];
      return sql<ExportLine[]>`
        select ${taskJson} as json, ${taskReencode} as reencode, ${usersOf("", shownCustomSql(""), userKeys)} as users
        from tasks t where t.organization_id = ${org} and t.number = any(${numbers as number[]}::bigint[]) order by t.number`;
    },

    /**
     * JSON lines of the versions after (task, seq) of tasks numbered below `before`, oldest first per
     * task, as the history route shows them (the owner is the task's; the users a line names include
     * its actor's); `more` when the page was cut
     * by its limit or its bytes, `last` where it ended. task_number stays a number in the
     * statement: the byte budget's window orders by it.
     */
    async versionLines(
      org: string,
      after: readonly [number, number],
      before: number,
      limit: number,
      userKeys: readonly string[],
    ): Promise<{ lines: ExportLine[]; more: boolean; last: [number, number] | null }> {
      const page = sql`
        select v.task_number, v.seq, ${versionJson} as json, ${versionReencode} as reencode,
          (${usersOf("v.", "v.custom_fields", userKeys, "t.owner_user_id")} || array_remove(array[v.actor_user_id], null)) as users, ${VERSION_BYTES} as bytes
        from task_versions v join tasks t on t.organization_id = v.organization_id and t.number = v.task_number
        where v.organization_id = ${org} and (v.task_number, v.seq) > (${after[0]}::bigint, ${after[1]}::int)
          and v.task_number < ${before}::bigint and t.number >= ${after[0]}::bigint and t.number < ${before}::bigint and ${live}
        order by v.task_number, v.seq
        limit ${limit}`;
      const rows = await sql<(ExportLine & Budgeted & { task_number: string; seq: number })[]>`${withinBudget(
        sql,
        page,
        "item.bytes",
        "item.task_number, item.seq",
        CHUNK_BYTES,
      )}`;
      const kept = rows.filter((r, i) => i === 0 || r.fits);
      const end = kept[kept.length - 1];
      return {
        lines: kept,
        more: rows.length === limit || kept.length < rows.length,
        last: end === undefined ? null : [Number(end.task_number), end.seq],
      };
    },

    /** Edges after (blocked, blocker) whose two tasks are exported. */
    async dependencies(org: string, after: readonly [number, number], limit: number): Promise<Array<{ blocked: number; blocker: number }>> {
      const rows = await sql<{ blocked: string; blocker: string }[]>`
        select d.blocked_number::text as blocked, d.blocker_number::text as blocker from dependencies d
        where d.organization_id = ${org} and (d.blocked_number, d.blocker_number) > (${after[0]}::bigint, ${after[1]}::bigint)
          and ${liveTask(org, sql.unsafe("d.blocked_number"), after[0])} and ${liveTask(org, sql.unsafe("d.blocker_number"))}
        order by d.blocked_number, d.blocker_number
        limit ${limit}`;
      return rows.map((r) => ({ blocked: Number(r.blocked), blocker: Number(r.blocker) }));
    },

    /** Comments after (task, created_at, id), oldest first per task, as the comments route shows them. */
    async comments(org: string, after: CommentPosition | null, limit: number): Promise<{ items: Comment[]; last: CommentPosition | null }> {
      const position =
        after === null ? sql`` : sql`and (c.task_number, c.created_at, c.id) > (${after.task}::bigint, ${after.at}::text::timestamptz, ${after.id})`;
      const page = sql`
        select c.id, c.task_number, c.author_id, c.body, c.mention_ids, c.created_at, c.updated_at, c.edited_at,
          c.created_at::text as at, ${COMMENT_BYTES} as bytes
        from comments c
        where c.organization_id = ${org} ${position} and ${liveTask(org, sql.unsafe("c.task_number"), after?.task ?? 0)}
        order by c.task_number, c.created_at, c.id
        limit ${limit}`;
      const rows = await sql<(CommentRow & Budgeted & { at: string })[]>`${withinBudget(
        sql,
        page,
        "item.bytes",
        "item.task_number, item.created_at, item.id",
        CHUNK_BYTES,
      )}`;
      const kept = rows.filter((r, i) => i === 0 || r.fits);
      const last = kept[kept.length - 1];
      return { items: kept.map(toComment), last: last === undefined ? null : { task: Number(last.task_number), at: last.at, id: last.id } };
    },

    /** Names of the organization's projects or labels, for a CSV's columns. */
    async names(org: string, table: "projects" | "labels", ids: readonly string[]): Promise<Map<string, string>> {
      if (ids.length === 0) return new Map();
      const rows = await sql<{ id: string; name: string }[]>`
        select id, name from ${sql(table)} where organization_id = ${org} and id = any(${ids as string[]}::text[])`;
      return new Map(rows.map((r) => [r.id, r.name]));
    },
  };
}
export type ExportReads = ReturnType<typeof exportReads>;

/**
 * A comment's place in the export's order; `at` is the timestamp as Postgres writes it, to the
 * microsecond, and goes back as text: a parameter typed timestamptz would pass through a Date and
 * lose the microseconds, and the keyset would return the same row for ever.
 */
export interface CommentPosition {
  task: number;
  at: string;
  id: string;
}
