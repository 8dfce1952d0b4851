import type { FilterValue, Page, RawJson, Task, TaskCondition, TaskFilter, TaskSort, TaskSortKey } from "@tasksvc/contracts";
import { taskNumber } from "@tasksvc/contracts";
import {
  type Budgeted,
  cancelAt,
  DEFAULT_PAGE_BYTES,
  decodeKeyset,
  type Fragment,
  KEYSET_TIME,
  rawPageOf,
  READ_SUFFIX,
  type Sql,
  withinBudget,
} from "@tasksvc/db";
import { TASK_JSON, TASK_JSON_REENCODE } from "./task-json.js";

/**
 * The text a task is searched by, in the language-neutral configuration with unaccent (migration
 * 0012, in the service's schema: the search path names it). The GIN index is on this very
 * expression (indexes.ts), so it must not change alone.
 */
export const TEXT_VECTOR = `to_tsvector('task_search'::regconfig, title || ' ' || coalesce(description, '') || ' ' || coalesce(notes, ''))`;
const TEXT_QUERY = `websearch_to_tsquery('task_search'::regconfig, `;
/** Has an open blocker: a dependency on a task that is not COMPLETED (the dependency view's is_blocked). */
const IS_BLOCKED = `exists (select 1 from dependencies d join tasks b on b.organization_id = d.organization_id and b.number = d.blocker_number
  where d.organization_id = tasks.organization_id and d.blocked_number = tasks.number and b.status <> 'COMPLETED')`;

const rank = (missing: number) => `(case priority when 'LOW' then 1 when 'MEDIUM' then 2 when 'HIGH' then 3 when 'URGENT' then 4 else ${missing} end)`;

/**
 * Each sort key as an expression without nulls: a task without the value gets a sentinel that
 * sorts after every value in that direction, so "nulls last" holds both ways and the keyset is a
 * plain row comparison an index serves (indexes.ts has one index per expression).
 */
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
  // The sentinels have no to_char (null): they are written as Postgres writes them, `infinity`,
  // which the read-back takes as it takes a time (and a day of a cursor from before due dates
  // were instants, as 00:00 UTC).
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
  const key = SORT_KEYS[(desc ? sort.slice(1) : sort) as TaskSortKey];
  const expr = desc ? key.desc : key.asc;
  return { desc, expr, text: key.text(expr), readBack: key.readBack };
}

/** Columns of the conditions; `nullable` decides what a negated comparison must also match. */
const COLUMNS: Record<Exclude<TaskCondition["field"], "project_id" | "text" | "is_blocked">, { col: string; cast: string; nullable: boolean }> = {
  status: { col: "status", cast: "::text", nullable: false },
  priority: { col: "priority", cast: "::text", nullable: true },
  parent_task_id: { col: "parent_number", cast: "::bigint", nullable: true },
  archived: { col: "archived", cast: "::boolean", nullable: false },
  due_date: { col: "due_date", cast: "::timestamptz", nullable: true },
  created_at: { col: "created_at", cast: "::timestamptz", nullable: false },
  updated_at: { col: "updated_at", cast: "::timestamptz", nullable: false },
  story_points: { col: "story_points", cast: "::numeric", nullable: true },
  title: { col: "title", cast: "::text", nullable: false },
};

/** The opposite of each op, so that `not` is pushed down to the conditions and stays indexable. */
const OPPOSITE = { eq: "neq", neq: "eq", in: "nin", nin: "in", lt: "gte", gte: "lt", gt: "lte", lte: "gt" } as const;
const COMPARE = { lt: "<", lte: "<=", gt: ">", gte: ">=" } as const;

const likePattern = (s: string) => `%${s.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
const number = (v: string | number) => taskNumber(String(v)) ?? -1;

/**
 * A filter tree as SQL with two-valued logic: on a task without the value, eq/in/lt/contains are
 * false and neq/nin true, and `not` is the exact negation. Negation is pushed down (De Morgan, each
 * op to its opposite), so no condition ends up inside a NOT that an index could not serve.
 */
export function compileFilter(sql: Sql, f: TaskFilter, negated = false, vector = TEXT_VECTOR): Fragment {
  if ("and" in f || "or" in f) {
    const conj = "and" in f ? !negated : negated;
    const parts = ("and" in f ? f.and : f.or).map((c) => compileFilter(sql, c, negated, vector));
    return joinParts(sql, parts, conj);
  }
  if ("not" in f) return compileFilter(sql, f.not, !negated, vector);
  return condition(sql, f, negated, vector);
}

function joinParts(sql: Sql, parts: Fragment[], conj: boolean): Fragment {
  let out = sql`(${parts[0] as Fragment}`;
  for (const p of parts.slice(1)) out = conj ? sql`${out} and ${p}` : sql`${out} or ${p}`;
  return sql`${out})`;
}

function condition(sql: Sql, c: TaskCondition, negated: boolean, vector: string): Fragment {
  const { field, value } = c;
  let op = c.op;
  if (op === "is_null") {
    const isNull = (value === true) !== negated;
    if (field === "project_id") return isNull ? sql`project_ids = '{}'::text[]` : sql`project_ids <> '{}'::text[]`;
    const col = sql.unsafe(COLUMNS[field as keyof typeof COLUMNS].col);
    return isNull ? sql`${col} is null` : sql`${col} is not null`;
  }
  if (field === "text") {
    // With several text conditions, the row's vector computed once (page(): TEXT_JOIN).
    const match = sql`${sql.unsafe(vector)} @@ ${sql.unsafe(TEXT_QUERY)}${String(value)})`;
    return negated ? sql`not ${match}` : match;
  }
  if (field === "is_blocked") {
    // eq true, neq false, or their negations: "has an open blocker".
    const blocked = ((op === "eq") === (value === true)) !== negated;
    return blocked ? sql.unsafe(IS_BLOCKED) : sql`not ${sql.unsafe(IS_BLOCKED)}`;
  }
  if (field === "created_at" || field === "updated_at" || (field === "due_date" && op in COMPARE)) return timeCondition(sql, field, op, String(value), negated);
  if (field === "project_id") return projectCondition(sql, op, value, negated);
  if (op === "contains") {
    const like = sql`title ilike ${likePattern(String(value))}`;
    return negated ? sql`title not ilike ${likePattern(String(value))}` : like;
  }
  if (negated) op = OPPOSITE[op as keyof typeof OPPOSITE];
  const { col: name, cast, nullable } = COLUMNS[field];
  const col = sql.unsafe(name);
  const one = (v: FilterValue) =>
    (field === "parent_task_id" ? number(v as string) : field === "due_date" ? instantText(String(v)) : v) as string | number | boolean;
  const list = () => (value as Array<string | number>).map((v) => String(one(v)));
  switch (op) {
    case "eq":
      return sql`${col} = ${one(value)}${sql.unsafe(cast)}`;
    case "neq":
      return nullable ? sql`${col} is distinct from ${one(value)}${sql.unsafe(cast)}` : sql`${col} <> ${one(value)}${sql.unsafe(cast)}`;
    case "in":
      return sql`${col} = any(${list()}${sql.unsafe(`${cast}[]`)})`;
    case "nin":
      return nullable ? sql`(${col} is null or ${col} <> all(${list()}${sql.unsafe(`${cast}[]`)}))` : sql`${col} <> all(${list()}${sql.unsafe(`${cast}[]`)})`;
    default: {
      // lt, lte, gt, gte; negated (the opposite op) a task without the value matches too.
      const cmp = sql`${col} ${sql.unsafe(COMPARE[op as keyof typeof COMPARE])} ${one(value)}${sql.unsafe(cast)}`;
      return negated && nullable ? sql`(${cmp} or ${col} is null)` : cmp;
    }
  }
}

/** A time a client sent, a bare date meaning 00:00 UTC, as Postgres reads it whatever its session's zone. */
const instantText = (v: string) => (v.length === 10 ? `${v}T00:00:00Z` : v);

/**
 * A time as the API shows it, to the millisecond: created_at and updated_at hold microseconds, so
 * `lte` the time a task shows must still match that task (a due date holds whole milliseconds,
 * which the same bounds compare exactly). Each bound becomes a half-open bound on the column (an
 * index range): shown < T is col < ceil(T); shown <= T is col < floor(T) + 1 ms. A due date is
 * compared with the instant itself, never cut to its day: a task due 00:00:00 is before 00:00:01.
 */
function timeCondition(sql: Sql, field: "created_at" | "updated_at" | "due_date", op: TaskCondition["op"], value: string, negated: boolean): Fragment {
  const floor = Date.parse(instantText(value));
  const subMillisecond = /T\d{2}:\d{2}:\d{2}\.\d{3}\d*[1-9]/.test(value);
  const ceil = subMillisecond ? floor + 1 : floor;
  const effective = negated ? OPPOSITE[op as keyof typeof OPPOSITE] : op;
  const below = effective === "lt" || effective === "lte";
  const bound = new Date(effective === "lt" || effective === "gte" ? ceil : floor + 1).toISOString();
  const col = sql.unsafe(field);
  const cmp = below ? sql`${col} < ${bound}::timestamptz` : sql`${col} >= ${bound}::timestamptz`;
  // Negated, the opposite comparison; a task without a due date matches it (two-valued logic).
  return negated && field === "due_date" ? sql`(${cmp} or due_date is null)` : cmp;
}

/** A task belongs to several projects: eq is "in this one", in "in any", neq and nin "in none". */
function projectCondition(sql: Sql, op: TaskCondition["op"], value: FilterValue, negated: boolean): Fragment {
  const ids = Array.isArray(value) ? value.map(String) : [String(value)];
  const inAny = op === "eq" || op === "in";
  return inAny !== negated ? sql`project_ids && ${ids}::text[]` : sql`not (project_ids && ${ids}::text[])`;
}

/**
 * A task's text vector, computed once per row that reaches the text conditions, for a filter
 * with more than one. Each condition written on TEXT_VECTOR itself made Postgres tokenize the
 * whole text again: a filter of 50
 * negated conditions over tasks with 99,000-character notes cost seconds of CPU per task
 * (measured: 150 ms per condition for 20 such tasks; 152 ms for all 50 conditions computed once).
 * OFFSET 0 keeps the planner from inlining the subquery back into each condition.
 */
const TEXT_JOIN = `cross join lateral (select ${TEXT_VECTOR} as vector offset 0) task_text`;

/**
 * A lower bound of a task's size as JSON, read without unpacking its text (octet_length of a
 * stored value reads its header): the free text's bytes, which JSON writes at least once.
 */
const LEAST_BYTES = `(octet_length(title) + coalesce(octet_length(description), 0) + coalesce(octet_length(notes), 0))`;

/** How many full-text conditions the tree has. */
export function textConditions(f: TaskFilter): number {
  if ("and" in f) return f.and.reduce((n, c) => n + textConditions(c), 0);
  if ("or" in f) return f.or.reduce((n, c) => n + textConditions(c), 0);
  if ("not" in f) return textConditions(f.not);
  return f.field === "text" ? 1 : 0;
}

/**
 * A full-text condition every match must meet (the tree itself, or one of its top-level `and`),
 * written on the indexed expression: implied by the filter, it only lets the planner use the
 * text index, which it cannot for conditions on the computed vector.
 */
function indexedText(f: TaskFilter): string | undefined {
  if ("field" in f) return f.field === "text" && f.op === "matches" ? String(f.value) : undefined;
  if (!("and" in f)) return undefined;
  for (const c of f.and) if ("field" in c && c.field === "text" && c.op === "matches") return String(c.value);
  return undefined;
}

/** Whether the tree says anything about `archived` (else only current tasks match, as the list's default). */
export function namesArchived(f: TaskFilter): boolean {
  if ("and" in f) return f.and.some(namesArchived);
  if ("or" in f) return f.or.some(namesArchived);
  if ("not" in f) return namesArchived(f.not);
  return f.field === "archived";
}

/**
 * The sync horizon: the start of the oldest transaction of this service still open, this
 * statement's own included (`now()`, so that a reader whose connection is not named like the
 * service's still gets one: a missing horizon once reached the driver as a date it could not
 * encode, which broke the connection and hung the pool). A write stamps updated_at with its
 * transaction's start and may commit after a later one, so a row newer than this may still be
 * joined by an older one; paging forward by updated_at stops here, and whatever commits late is
 * never behind a reader's cursor (decision 0025). Read by a statement of its own, before the
 * listing's: read within it, after its snapshot, a write that committed in between would be
 * neither open nor visible. As text, to keep its microseconds.
 *
 * Only transactions that may write count: every task write runs in a transaction of the pool's
 * transaction connections (libs/db), while reads run on its autocommit connections, whose
 * application_name ends in READ_SUFFIX. A long read (one tenant's expensive search) would
 * otherwise hold back every tenant's sync listing for as long as it runs; one of those that did
 * write (backend_xid set) still counts.
 */
const SYNC_HORIZON = `select least(min(xact_start), now())::text as horizon from pg_stat_activity
  where datname = current_database() and backend_type = 'client backend'
    and left(application_name, length('tasksvc-' || current_schema() || '-')) = 'tasksvc-' || current_schema() || '-'
    and (backend_xid is not null or right(application_name, length('${READ_SUFFIX}')) <> '${READ_SUFFIX}')`;

export interface TaskQuery {
  /** When the caller stops waiting (Unix milliseconds): the statement is cancelled then. */
  until?: number | undefined;
  filter: TaskFilter | undefined;
  /** Occurrences of one series (the list's series_task_id; not a search field). */
  series?: number | undefined;
  sort: TaskSort;
  limit: number;
  after?: string | undefined;
}

/** `pageBytes`: the bytes of tasks one page may carry (pageBudget() of the service's NATS connection). */
export function taskSearch(sql: Sql, pageBytes = DEFAULT_PAGE_BYTES) {
  const taskJson = sql.unsafe(TASK_JSON);
  const reencode = sql.unsafe(TASK_JSON_REENCODE);
  return {
    /** A page of the organization's tasks that match, in the sort's order, after the cursor. */
    async page(org: string, q: TaskQuery): Promise<RawJson<Page<Task>>> {
      const s = sortOf(q.sort);
      const expr = sql.unsafe(s.expr);
      const dir = sql.unsafe(s.desc ? "desc" : "asc");
      let after = sql``;
      if (q.after) {
        const [v, n] = decodeKeyset(q.after, 2);
        after = sql`and (${expr}, tasks.number) ${sql.unsafe(s.desc ? "<" : ">")} (${String(v)}${sql.unsafe(s.readBack)}, ${String(n)}::bigint)`;
      }
      // One text condition is written on the indexed expression itself, evaluated at most once a
      // row; several read the row's vector computed once (TEXT_JOIN), one of them repeated on the
      // expression where the filter implies it, for the index.
      const several = q.filter !== undefined && textConditions(q.filter) > 1;
      const filter = q.filter === undefined ? sql`true` : compileFilter(sql, q.filter, false, several ? "task_text.vector" : TEXT_VECTOR);
      const indexed = several && q.filter !== undefined ? indexedText(q.filter) : undefined;
      const textJoin = several ? sql.unsafe(TEXT_JOIN) : sql``;
      const textIndex = indexed === undefined ? sql`` : sql`and ${sql.unsafe(TEXT_VECTOR)} @@ ${sql.unsafe(TEXT_QUERY)}${indexed})`;
      const archived = q.filter !== undefined && namesArchived(q.filter) ? sql`` : sql`and archived = false`;
      let horizon = sql``;
      if (q.sort === "updated_at") {
        // An aggregate without GROUP BY answers one row, never null (least() skips a null min).
        const [h] = await sql<{ horizon: string }[]>`${sql.unsafe(SYNC_HORIZON)}`;
        if (h === undefined) throw new Error("the sync horizon query answered no row");
        horizon = sql`and updated_at < ${h.horizon}::timestamptz`;
      }
      // The number is selected as text under another name: in ORDER BY, `number` would be that
      // output column, sorted as text, not the table's bigint. The sort's values are selected too,
      // for the byte budget's running sum in the same order.
      const raw = sql`
        select tasks.*, ${sql.unsafe(s.text)} as cursor_at, number::text as cursor_number, ${expr} as sort_value,
          tasks.number as sort_number, ${sql.unsafe(LEAST_BYTES)} as least_bytes
        from tasks ${textJoin}
        where organization_id = ${org} ${archived} ${textIndex} and ${filter}
          ${q.series === undefined ? sql`` : sql`and series_head = ${q.series}`}
          ${horizon} ${after}
        order by ${expr} ${dir}, tasks.number ${dir}
        limit ${q.limit + 1}`;
      const order = `item.sort_value ${s.desc ? "desc" : "asc"}, item.sort_number ${s.desc ? "desc" : "asc"}`;
      // Two cuts: first by a lower bound of each task's size read without unpacking its text, so
      // the JSON is built only for the tasks that may fit (not for every row the limit reads, which
      // for tasks of 600 kB each meant 60 MB built to send one); then by the JSON's own size.
      const mayFit = withinBudget(sql, raw, "item.least_bytes", order, pageBytes);
      const built = sql`
        select ${taskJson} as json, ${reencode} as reencode, cursor_at, cursor_number, sort_value, sort_number
        from (${mayFit}) may_fit`;
      const rows = await cancelAt(
        sql<({ json: string; reencode: boolean; cursor_at: string; cursor_number: string } & Budgeted)[]>`${withinBudget(
          sql,
          built,
          "octet_length(item.json)",
          order,
          pageBytes,
        )}`,
        q.until,
      );
      for (const r of rows) if (r.reencode) r.json = JSON.stringify(JSON.parse(r.json));
      return rawPageOf<Task, (typeof rows)[number]>(rows, q.limit, (r) => [r.cursor_at, r.cursor_number]);
    },
  };
}
