import type { FilterField, FilterOp, FilterValue, OpsOf, TaskCondition, TaskFilter } from "@tasksvc/contracts";
import { isCustomCondition, taskNumber } from "@tasksvc/contracts";
import { customCondition, isResolvedCustom } from "./custom-filter-sql.js";
import { removalsPending } from "./task-fields.js";
import type { Fragment, Sql } from "@tasksvc/db";

/** The GIN index is on this very expression (indexes.ts), so it must not change alone. */
export const TEXT_VECTOR = `to_tsvector('task_search'::regconfig, title || ' ' || coalesce(description, '') || ' ' || coalesce(notes, ''))`;
export const TEXT_QUERY = `websearch_to_tsquery('task_search'::regconfig, `;
const IS_BLOCKED = `exists (select 1 from dependencies d join tasks b on b.organization_id = d.organization_id and b.number = d.blocker_number
  where d.organization_id = tasks.organization_id and d.blocked_number = tasks.number and b.status <> 'COMPLETED' and b.deleted_at is null)`;

type Scalar = string | number | boolean;
type Column = { kind: "column"; col: string; cast: string; nullable: boolean; param?: (v: Scalar) => Scalar; like?: true };
/** Compared to the millisecond the API shows (timeCondition). */
type Time = { kind: "time"; col: string; nullable: boolean };
type Projects = { kind: "projects" };
type Assignees = { kind: "assignees" };
type Labels = { kind: "labels" };
type Blocked = { kind: "blocked" };
type FullText = { kind: "text" };

type ColumnOp = "eq" | "neq" | "in" | "nin" | "lt" | "lte" | "gt" | "gte" | "is_null";
type SqlFor<O extends FilterOp> =
  | ([O] extends [ColumnOp] ? Column | Time : never)
  | ([O] extends [ColumnOp | "contains"] ? Column & { like: true } : never)
  | ([O] extends ["eq" | "neq" | "in" | "nin" | "is_null"] ? Projects : never)
  | ([O] extends ["eq" | "neq"] ? Blocked : never)
  | ([O] extends ["contains" | "in" | "is_null"] ? Assignees : never)
  | ([O] extends ["contains" | "in" | "nin" | "is_null"] ? Labels : never)
  | ([O] extends ["matches"] ? FullText : never);

/** A field without a row, or whose row cannot compile one of its ops, does not type-check. */
export type FilterSql = { [F in FilterField]: SqlFor<OpsOf<F>> };

/** As Postgres reads it whatever its session's zone. */
const instantText = (v: Scalar) => (String(v).length === 10 ? `${v}T00:00:00Z` : String(v));

const FILTER_SQL: FilterSql = {
  status: { kind: "column", col: "status", cast: "::text", nullable: false },
  priority: { kind: "column", col: "priority", cast: "::text", nullable: true },
  project_id: { kind: "projects" },
  parent_task_id: { kind: "column", col: "parent_number", cast: "::bigint", nullable: true, param: (v) => taskNumber(String(v)) ?? -1 },
  owner_id: { kind: "column", col: "owner_user_id", cast: "::text", nullable: false },
  assignee_ids: { kind: "assignees" },
  label_ids: { kind: "labels" },
  archived: { kind: "column", col: "archived", cast: "::boolean", nullable: false },
  is_blocked: { kind: "blocked" },
  due_date: { kind: "time", col: "due_date", nullable: true },
  created_at: { kind: "time", col: "created_at", nullable: false },
  updated_at: { kind: "time", col: "updated_at", nullable: false },
  story_points: { kind: "column", col: "story_points", cast: "::numeric", nullable: true },
  title: { kind: "column", col: "title", cast: "::text", nullable: false, like: true },
  text: { kind: "text" },
};

/** So that `not` is pushed down to the conditions and stays indexable. */
const OPPOSITE = { eq: "neq", neq: "eq", in: "nin", nin: "in", lt: "gte", gte: "lt", gt: "lte", lte: "gt" } as const;
const COMPARE = { lt: "<", lte: "<=", gt: ">", gte: ">=" } as const;
const isCompare = (op: FilterOp): op is keyof typeof COMPARE => op in COMPARE;

const likePattern = (s: string) => `%${s.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/**
 * Two-valued logic: on a task without the value, eq/in/lt/contains are false and neq/nin true, and
 * `not` is the exact negation, pushed down so no condition ends up inside a NOT an index cannot serve.
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
  if (isCustomCondition(c)) {
    if (!isResolvedCustom(c)) throw new Error(`${c.field} reached SQL without its field's type`);
    return customCondition(sql, c, negated);
  }
  const at = FILTER_SQL[c.field];
  switch (at.kind) {
    case "text": {
      // With several text conditions, the row's vector is computed once (TEXT_JOIN).
      const match = sql`${sql.unsafe(vector)} @@ ${sql.unsafe(TEXT_QUERY)}${String(c.value)})`;
      return negated ? sql`not ${match}` : match;
    }
    case "blocked": {
      const blocked = ((c.op === "eq") === (c.value === true)) !== negated;
      return blocked ? sql.unsafe(IS_BLOCKED) : sql`not ${sql.unsafe(IS_BLOCKED)}`;
    }
    case "projects":
      return projectCondition(sql, c.op, c.value, negated);
    case "assignees":
      return assigneeCondition(sql, c.op, c.value, negated);
    case "labels":
      return labelCondition(sql, c.op, c.value, negated);
    case "time":
      if (isCompare(c.op)) return timeCondition(sql, at, c.op, String(c.value), negated);
      return columnCondition(sql, { kind: "column", col: at.col, cast: "::timestamptz", nullable: at.nullable, param: instantText }, c.op, c.value, negated);
    case "column":
      return columnCondition(sql, at, c.op, c.value, negated);
  }
}

function columnCondition(sql: Sql, at: Column, given: FilterOp, value: FilterValue, negated: boolean): Fragment {
  const col = sql.unsafe(at.col);
  if (given === "is_null") return (value === true) !== negated ? sql`${col} is null` : sql`${col} is not null`;
  if (given === "contains") {
    const pattern = likePattern(String(value));
    if (!negated) return sql`${col} ilike ${pattern}`;
    return at.nullable ? sql`(${col} is null or ${col} not ilike ${pattern})` : sql`${col} not ilike ${pattern}`;
  }
  const op = negated ? OPPOSITE[given as keyof typeof OPPOSITE] : given;
  const cast = sql.unsafe(at.cast);
  const casts = sql.unsafe(`${at.cast}[]`);
  const one = (v: Scalar) => (at.param ? at.param(v) : v);
  const list = () => (value as Array<string | number>).map((v) => String(one(v)));
  switch (op) {
    case "eq":
      return sql`${col} = ${one(value as Scalar)}${cast}`;
    case "neq":
      return at.nullable ? sql`${col} is distinct from ${one(value as Scalar)}${cast}` : sql`${col} <> ${one(value as Scalar)}${cast}`;
    case "in":
      return sql`${col} = any(${list()}${casts})`;
    case "nin":
      return at.nullable ? sql`(${col} is null or ${col} <> all(${list()}${casts}))` : sql`${col} <> all(${list()}${casts})`;
    default: {
      const cmp = sql`${col} ${sql.unsafe(COMPARE[op as keyof typeof COMPARE])} ${one(value as Scalar)}${cast}`;
      return negated && at.nullable ? sql`(${cmp} or ${col} is null)` : cmp;
    }
  }
}

/**
 * created_at and updated_at hold microseconds, so `lte` the time a task shows must still match it.
 * Each bound becomes a half-open bound on the column (an index range): shown < T is col < ceil(T);
 * shown <= T is col < floor(T) + 1 ms. A due date is never cut to its day: a task due 00:00:00 is
 * before 00:00:01.
 */
function timeCondition(sql: Sql, at: Time, op: keyof typeof COMPARE, value: string, negated: boolean): Fragment {
  const floor = Date.parse(instantText(value));
  const subMillisecond = /T\d{2}:\d{2}:\d{2}\.\d{3}\d*[1-9]/.test(value);
  const ceil = subMillisecond ? floor + 1 : floor;
  const effective = negated ? OPPOSITE[op] : op;
  const below = effective === "lt" || effective === "lte";
  const bound = new Date(effective === "lt" || effective === "gte" ? ceil : floor + 1).toISOString();
  const col = sql.unsafe(at.col);
  const cmp = below ? sql`${col} < ${bound}::timestamptz` : sql`${col} >= ${bound}::timestamptz`;
  return negated && at.nullable ? sql`(${cmp} or ${col} is null)` : cmp;
}

function projectCondition(sql: Sql, op: FilterOp, value: FilterValue, negated: boolean): Fragment {
  if (op === "is_null") return (value === true) !== negated ? sql`project_ids = '{}'::text[]` : sql`project_ids <> '{}'::text[]`;
  const ids = Array.isArray(value) ? value.map(String) : [String(value)];
  const inAny = op === "eq" || op === "in";
  return inAny !== negated ? sql`project_ids && ${ids}::text[]` : sql`not (project_ids && ${ids}::text[])`;
}

/** `@>` and `&&` are what the GIN index on assignee_ids serves. */
function assigneeCondition(sql: Sql, op: FilterOp, value: FilterValue, negated: boolean): Fragment {
  if (op === "is_null") return (value === true) !== negated ? sql`assignee_ids = '{}'::text[]` : sql`assignee_ids <> '{}'::text[]`;
  const ids = Array.isArray(value) ? value.map(String) : [String(value)];
  const match = op === "contains" ? sql`assignee_ids @> ${ids}::text[]` : sql`assignee_ids && ${ids}::text[]`;
  return negated ? sql`not (${match})` : match;
}

/**
 * On the stored column for the GIN index, and again on the labels reads show, so a label being
 * removed from every task matches none, as it shows on none.
 */
function labelCondition(sql: Sql, op: FilterOp, value: FilterValue, negated: boolean): Fragment {
  const ids = Array.isArray(value) ? value.map(String) : [String(value)];
  const pending = sql.unsafe(removalsPending(""));
  // While no removal runs (decided once per statement), the stored match is the whole condition: one the planner can estimate.
  const both = (op: "@>" | "&&") => {
    const o = sql.unsafe(op);
    return sql`(label_ids ${o} ${ids}::text[] and (not ${pending} or shown_labels(organization_id, label_ids) ${o} ${ids}::text[]))`;
  };
  const has = op === "contains" ? both("@>") : both("&&");
  if (op === "is_null") {
    const none = sql`(label_ids = '{}'::text[] or (${pending} and shown_labels(organization_id, label_ids) = '{}'::text[]))`;
    return (value === true) !== negated ? none : sql`not ${none}`;
  }
  const positive = op !== "nin";
  return positive !== negated ? has : sql`not ${has}`;
}

export function textConditions(f: TaskFilter): number {
  if ("and" in f) return f.and.reduce((n, c) => n + textConditions(c), 0);
  if ("or" in f) return f.or.reduce((n, c) => n + textConditions(c), 0);
  if ("not" in f) return textConditions(f.not);
  return !isCustomCondition(f) && FILTER_SQL[f.field].kind === "text" ? 1 : 0;
}

/** Implied by the filter, it only lets the planner use the text index, which it cannot for conditions on the computed vector. */
export function indexedText(f: TaskFilter): string | undefined {
  const text = (c: TaskFilter) =>
    "field" in c && !isCustomCondition(c) && FILTER_SQL[c.field].kind === "text" && c.op === "matches" ? String(c.value) : undefined;
  if ("field" in f) return text(f);
  if (!("and" in f)) return undefined;
  for (const c of f.and) {
    const t = text(c);
    if (t !== undefined) return t;
  }
  return undefined;
}

/** Whether a condition that `test` picks is anywhere in the filter. */
function anyCondition(f: TaskFilter, test: (c: Extract<TaskFilter, { field: unknown }>) => boolean): boolean {
  if ("and" in f) return f.and.some((c) => anyCondition(c, test));
  if ("or" in f) return f.or.some((c) => anyCondition(c, test));
  if ("not" in f) return anyCondition(f.not, test);
  return test(f);
}

export function namesArchived(f: TaskFilter): boolean {
  return anyCondition(f, (c) => c.field === "archived");
}

/**
 * An `archived` equality at the filter's top (GET's lists always have one), taken out of it: the
 * value every match has there, and the rest of the filter (undefined when nothing is left).
 */
export function liftArchived(f: TaskFilter): { archived: boolean | undefined; rest: TaskFilter | undefined } {
  const top = "and" in f ? f.and : [f];
  const at = top.findIndex((c) => "field" in c && c.field === "archived" && c.op === "eq" && typeof c.value === "boolean");
  const found = top[at];
  if (found === undefined || !("field" in found)) return { archived: undefined, rest: f };
  const left = top.filter((_c, i) => i !== at);
  return { archived: found.value === true, rest: left.length === 0 ? undefined : left.length === 1 ? left[0] : { and: left } };
}

const GUESSED: ReadonlySet<FilterSql[FilterField]["kind"]> = new Set(["projects", "assignees", "labels"] as const);

/**
 * Whether the planner may guess the filter's share of tasks blind: a custom field's (Postgres keeps
 * no statistics of a jsonb key's values), or an array column's in a prepared statement's generic
 * plan (one constant share for every label, assignee or project, whatever its values' statistics).
 */
export function selectivityGuessed(f: TaskFilter): boolean {
  return anyCondition(f, (c) => isCustomCondition(c) || GUESSED.has(FILTER_SQL[c.field].kind));
}
