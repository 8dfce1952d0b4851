import type { Page, RawJson, Task, TaskFilter, TaskSort, TaskSortKey } from "@tasksvc/contracts";
import {
  type Budgeted,
  cancelAt,
  plannedEachRun,
  DEFAULT_PAGE_BYTES,
  decodeKeyset,
  type Fragment,
  KEYSET_TIME,
  rawPageOf,
  READ_SUFFIX,
  type Sql,
  withinBudget,
} from "@tasksvc/db";
import { type CustomSortType, customSortedRows } from "./custom-sort-sql.js";

export type { CustomSortType };
import { compileFilter, liftArchived, indexedText, namesArchived, selectivityGuessed, TEXT_QUERY, TEXT_VECTOR, textConditions } from "./task-filter-sql.js";
import { compactJson, TASK_JSON, TASK_JSON_REENCODE } from "./task-json.js";

const rank = (missing: number) => `(case priority when 'LOW' then 1 when 'MEDIUM' then 2 when 'HIGH' then 3 when 'URGENT' then 4 else ${missing} end)`;

/** A sentinel sorts a missing value last in either direction, so the keyset is a plain row comparison an index serves. */
const SORT_KEYS: Record<TaskSortKey, { asc: string; desc: string; text: (e: string) => string; readBack: string }> = {
  updated_at: {
    asc: "updated_at",
    desc: "updated_at",
    text: (e) => `to_char(${e} at time zone 'UTC', ${KEYSET_TIME})`,
    readBack: "::text::timestamp at time zone 'UTC'",
  },
  created_at: {
    asc: "created_at",
    desc: "created_at",
    text: (e) => `to_char(${e} at time zone 'UTC', ${KEYSET_TIME})`,
    readBack: "::text::timestamp at time zone 'UTC'",
  },
  // The sentinels are written as Postgres writes them, `infinity`, which the read-back takes as it takes a time.
  due_date: {
    asc: "coalesce(due_date, 'infinity'::timestamptz)",
    desc: "coalesce(due_date, '-infinity'::timestamptz)",
    text: (e) => `coalesce(to_char(${e} at time zone 'UTC', ${KEYSET_TIME}), ${e}::text)`,
    readBack: "::text::timestamp at time zone 'UTC'",
  },
  priority: { asc: rank(5), desc: rank(0), text: (e) => `${e}::text`, readBack: "::text::integer" },
  story_points: {
    asc: "coalesce(story_points, 'Infinity'::numeric)",
    desc: "coalesce(story_points, '-Infinity'::numeric)",
    text: (e) => `${e}::text`,
    readBack: "::text::numeric",
  },
};

export function sortOf(sort: TaskSort) {
  const desc = sort.startsWith("-");
  const name = desc ? sort.slice(1) : sort;
  const key = SORT_KEYS[name as TaskSortKey];
  const expr = desc ? key.desc : key.asc;
  return { desc, expr, text: key.text(expr), readBack: key.readBack };
}

/**
 * Each condition written on TEXT_VECTOR made Postgres tokenize the whole text again (seconds of CPU
 * per task with long notes); OFFSET 0 keeps the planner from inlining it back (decision 0031).
 */
const TEXT_JOIN = `cross join lateral (select ${TEXT_VECTOR} as vector offset 0) task_text`;

/** octet_length of a stored value reads its header, without unpacking its text. */
const LEAST_BYTES = `(octet_length(title) + coalesce(octet_length(description), 0) + coalesce(octet_length(notes), 0))`;

/**
 * A write stamps updated_at with its transaction's start and may commit after a later one, so
 * paging forward by updated_at stops at the oldest open writing transaction (decision 0025). Read
 * by a statement of its own: within the listing's, after its snapshot, a write that committed in
 * between would be neither open nor visible. Reads (READ_SUFFIX) do not count, so one tenant's
 * long search holds back no one's sync (decision 0031). `now()` keeps it never null; text keeps its microseconds.
 */
const SYNC_HORIZON = `select least(min(xact_start), now())::text as horizon from pg_stat_activity
  where datname = current_database() and backend_type = 'client backend'
    and left(application_name, length('tasksvc-' || current_schema() || '-')) = 'tasksvc-' || current_schema() || '-'
    and (backend_xid is not null or right(application_name, length('${READ_SUFFIX}')) <> '${READ_SUFFIX}')`;

export interface TaskQuery {
  /** The statement is cancelled then. */
  until?: number | undefined;
  filter: TaskFilter | undefined;
  series?: number | undefined;
  sort: TaskSort;
  /** The type of the custom field `sort` names, when it names one. */
  sortType?: CustomSortType | undefined;
  limit: number;
  after?: string | undefined;
}

/**
 * Rows of the list's order walked before the indexes are asked, per row of the page: a filter that
 * matches one task in 40 or more fills the page from the walk.
 */
const WALK_PER_ROW = 40;

interface PlainParts {
  /** Conditions of the list itself (archived, series, horizon), which the order's index serves. */
  base: Fragment;
  /** The filter's conditions. */
  matched: Fragment;
  textJoin: Fragment;
  cursor: [string, string] | undefined;
  /** Whether the planner may guess the filter's selectivity blind (selectivityGuessed). */
  walkFirst: boolean;
}

/**
 * A page in the order of a task's own column, walked on the index of that order (indexes.ts). With
 * walkFirst, the first rows of the order are read and filtered before any index is chosen: Postgres
 * has no statistics of a jsonb key's values, guessed that 5% of tasks was 0.01%, and read and sorted
 * all 50,000 matches (280 ms at a million tasks) instead of passing over 500 rows; a label's page
 * did the same once a connection's prepared statement went to its generic plan. Only when the walk
 * does not fill the page does the planner choose; those matches are then rare, as it guesses.
 */
function plainRows(sql: Sql, org: string, q: TaskQuery, p: PlainParts): Fragment {
  const s = sortOf(q.sort);
  const expr = sql.unsafe(s.expr);
  const dir = sql.unsafe(s.desc ? "desc" : "asc");
  const after =
    p.cursor === undefined
      ? sql``
      : sql`and (${expr}, tasks.number) ${sql.unsafe(s.desc ? "<" : ">")} (${p.cursor[0]}${sql.unsafe(s.readBack)}, ${p.cursor[1]}::bigint)`;
  // In ORDER BY, `number` would be the text output column, not the table's bigint: hence another name.
  const columns = sql`tasks.*, ${sql.unsafe(s.text)} as cursor_at, tasks.number::text as cursor_number, ${expr} as sort_value,
      tasks.number as sort_number, ${sql.unsafe(LEAST_BYTES)} as least_bytes`;
  const planned = sql`
    select ${columns}
    from tasks ${p.textJoin}
    where organization_id = ${org} ${p.base} ${after} and ${p.matched}
    order by ${expr} ${dir}, tasks.number ${dir}
    limit ${q.limit + 1}`;
  if (!p.walkFirst) return planned;
  return sql`
    with walked as materialized (
      select ${columns}
      from (select tasks.* from tasks where organization_id = ${org} ${p.base} ${after}
            order by ${expr} ${dir}, tasks.number ${dir} limit ${WALK_PER_ROW * (q.limit + 1)}) tasks ${p.textJoin}
      where ${p.matched}
      order by ${expr} ${dir}, tasks.number ${dir}
      limit ${q.limit + 1})
    select * from walked where (select count(*) from walked) > ${q.limit}
    union all
    select * from (${planned}) planned where (select count(*) from walked) <= ${q.limit}`;
}

export function taskSearch(sql: Sql, pageBytes = DEFAULT_PAGE_BYTES) {
  const taskJson = sql.unsafe(TASK_JSON);
  const reencode = sql.unsafe(TASK_JSON_REENCODE);
  return {
    async page(org: string, q: TaskQuery): Promise<RawJson<Page<Task>>> {
      const desc = q.sort.startsWith("-");
      const cursor = q.after === undefined ? undefined : (decodeKeyset(q.after, 2).map(String) as [string, string]);
      // An archived equality at the filter's top is one of the list's own conditions, which the
      // order's index serves (it leads with archived), so that a walk of that order reads it.
      const lifted = q.filter === undefined ? { archived: false, rest: undefined } : liftArchived(q.filter);
      const f = lifted.rest;
      const archivedIs = lifted.archived ?? (f !== undefined && namesArchived(f) ? undefined : false);
      const archived = archivedIs === undefined ? sql`` : sql`and archived = ${sql.unsafe(archivedIs ? "true" : "false")}`;
      // One text condition is written on the indexed expression; several read the row's vector
      // computed once (TEXT_JOIN), one repeated on the expression, for the index.
      const texts = f === undefined ? 0 : textConditions(f);
      const several = texts > 1;
      const filter = f === undefined ? sql`true` : compileFilter(sql, f, false, several ? "task_text.vector" : TEXT_VECTOR);
      const indexed = several && f !== undefined ? indexedText(f) : undefined;
      const textJoin = several ? sql`${sql.unsafe(TEXT_JOIN)}` : sql``;
      const textIndex = indexed === undefined ? sql`` : sql`and ${sql.unsafe(TEXT_VECTOR)} @@ ${sql.unsafe(TEXT_QUERY)}${indexed})`;
      let horizon = sql``;
      if (q.sort === "updated_at") {
        // An aggregate without GROUP BY answers one row, never null (least() skips a null min).
        const [h] = await sql<{ horizon: string }[]>`${sql.unsafe(SYNC_HORIZON)}`;
        if (h === undefined) throw new Error("the sync horizon query answered no row");
        horizon = sql`and updated_at < ${h.horizon}::timestamptz`;
      }
      // A task in the trash is in no list (trashed rows are few: a filter on the rows the order's index yields).
      const base = sql`and deleted_at is null ${archived} ${q.series === undefined ? sql`` : sql`and series_head = ${q.series}`} ${horizon}`;
      const matched = sql`true ${textIndex} and ${filter}`;
      const where = sql`true ${base} and ${matched}`;
      const raw =
        q.sortType === undefined
          ? plainRows(sql, org, q, { base, matched, textJoin, cursor, walkFirst: f !== undefined && selectivityGuessed(f) })
          : customSortedRows(sql, {
              org,
              key: q.sort.replace(/^-?custom\./, ""),
              type: q.sortType,
              desc,
              limit: q.limit,
              after: cursor,
              where,
              textJoin,
              extra: `${LEAST_BYTES} as least_bytes`,
              filter: f,
            });
      const order = `item.sort_value ${desc ? "desc" : "asc"}, item.sort_number ${desc ? "desc" : "asc"}`;
      // Cut first by a lower bound read without unpacking the text, so the JSON is built only for tasks
      // that may fit (for tasks of 600 kB each, 60 MB were built to send one); then by the JSON's size.
      const mayFit = withinBudget(sql, raw, "item.least_bytes", order, pageBytes);
      const built = sql`
        select ${taskJson} as json, ${reencode} as reencode, cursor_at, cursor_number, sort_value, sort_number
        from (${mayFit}) may_fit
        offset 0`; // A fence: the JSON is built once per row, not again for each use of it in the budget's window.
      const statement = sql<({ json: string; reencode: boolean; cursor_at: string; cursor_number: string } & Budgeted)[]>`${withinBudget(
        sql,
        built,
        "octet_length(item.json)",
        order,
        pageBytes,
      )}`;
      // A text query's share of tasks is its words', and a custom field's values are read by a range
      // whose bounds decide between walking and searching: a generic plan guesses both blind.
      const rows = await cancelAt(texts > 0 || q.sortType !== undefined ? plannedEachRun(statement) : statement, q.until);
      for (const r of rows) if (r.reencode) r.json = compactJson(r.json);
      return rawPageOf<Task, (typeof rows)[number]>(rows, q.limit, (r) => [r.cursor_at, r.cursor_number]);
    },
  };
}
