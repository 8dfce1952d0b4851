import type { TaskFilter } from "@tasksvc/contracts";
import { isCustomCondition } from "@tasksvc/contracts";
import type { Fragment, Sql } from "@tasksvc/db";
import { isResolvedCustom } from "./custom-filter-sql.js";

/** The number and date fields a page may be sorted by; their values are kept in task_sort_values (migration 0022). */
export type CustomSortType = "number" | "date";

/** What a task without a value sorts as: last, in either direction. */
export const MISSING = {
  number: { asc: "Infinity", desc: "-Infinity", cast: "::numeric" },
  // YYYY-MM-DD sorts as text; no date reaches 'z', and every one passes ''.
  date: { asc: "z", desc: "", cast: "::text" },
} as const;

const COLUMN = { number: "num", date: "day" } as const;
const COMPARE = { lt: "<", lte: "<=", gt: ">", gte: ">=", eq: "=" } as const;

/**
 * What the filter's top-level conjunction says of the sorted field: bounds on its value, and whether
 * a task must have one. Those bound the walk of the values' index (a range sorted by its own field
 * starts at the range, not at the smallest value) and spare the walk of the tasks without a value.
 * The whole filter is still applied to every task; these only narrow where it looks.
 */
export function sortedFieldBounds(sql: Sql, filter: TaskFilter | undefined, key: string, type: CustomSortType) {
  const col = sql.unsafe("v.sorted_value");
  const cast = sql.unsafe(`::text${MISSING[type].cast}`);
  let bounds: Fragment = sql``;
  let required = false;
  const visit = (f: TaskFilter) => {
    if ("and" in f) return f.and.forEach(visit);
    if ("or" in f || "not" in f || !isCustomCondition(f) || !isResolvedCustom(f) || f.field !== `custom.${key}`) return;
    if (f.op === "is_null") required ||= f.value === false;
    else if (f.op in COMPARE && !Array.isArray(f.value)) {
      required = true;
      bounds = sql`${bounds} and ${col} ${sql.unsafe(COMPARE[f.op as keyof typeof COMPARE])} ${String(f.value)}${cast}`;
    }
  };
  if (filter !== undefined) visit(filter);
  return { bounds, required };
}

export interface CustomSortParts {
  org: string;
  key: string;
  type: CustomSortType;
  desc: boolean;
  limit: number;
  after: [string, string] | undefined;
  /** The conditions both branches apply to the task (the filter, archived, the series, text). */
  where: Fragment;
  textJoin: Fragment;
  /** Computed columns every row of the page carries, after its sort value. */
  extra: string;
  filter: TaskFilter | undefined;
}

/**
 * A page sorted by a number or date field: the tasks with a value in the field's order, read from
 * the values' index, then, when those do not fill the page, the tasks without one by number (they
 * sort last). The second branch runs only then: its condition on the first is decided once.
 */
export function customSortedRows(sql: Sql, p: CustomSortParts): Fragment {
  const col = COLUMN[p.type];
  const missing = MISSING[p.type][p.desc ? "desc" : "asc"];
  const cast = MISSING[p.type].cast;
  const dir = sql.unsafe(p.desc ? "desc" : "asc");
  const beyond = sql.unsafe(p.desc ? "<" : ">");
  const { bounds, required } = sortedFieldBounds(sql, p.filter, p.key, p.type);
  const inMissing = p.after !== undefined && p.after[0] === missing;
  const afterValued =
    p.after === undefined
      ? sql``
      : inMissing
        ? sql`and false`
        : sql`and (v.sorted_value, v.sorted_task) ${beyond} (${p.after[0]}::text${sql.unsafe(cast)}, ${p.after[1]}::bigint)`;
  const afterMissing = inMissing && p.after !== undefined ? sql`and tasks.number ${beyond} ${p.after[1]}::bigint` : sql``;
  // The values are read through a subquery that names only its two columns, so the filter's
  // unqualified columns (organization_id above all) stay the task's.
  const valued = sql`
    select tasks.*, v.sorted_value::text as cursor_at, tasks.number::text as cursor_number, v.sorted_value as sort_value,
      tasks.number as sort_number, ${sql.unsafe(p.extra)}
    from (select task_number as sorted_task, ${sql.unsafe(col)} as sorted_value from task_sort_values
          where organization_id = ${p.org} and field_key = ${p.key} and ${sql.unsafe(col)} is not null) v
      join tasks on tasks.organization_id = ${p.org} and tasks.number = v.sorted_task ${p.textJoin}
    where true ${bounds} ${afterValued} and ${p.where}
    order by v.sorted_value ${dir}, v.sorted_task ${dir}
    limit ${p.limit + 1}`;
  if (required) return valued;
  return sql`
    with valued as materialized (${valued})
    select * from valued
    union all
    select * from (
      select tasks.*, ${missing}::text as cursor_at, tasks.number::text as cursor_number, ${missing}::text${sql.unsafe(cast)} as sort_value,
        tasks.number as sort_number, ${sql.unsafe(p.extra)}
      from tasks ${p.textJoin}
      where tasks.organization_id = ${p.org} and ${p.where} ${afterMissing}
        and not exists (select 1 from task_sort_values s
          where s.organization_id = tasks.organization_id and s.task_number = tasks.number and s.field_key = ${p.key})
      order by tasks.number ${dir}
      limit ${p.limit + 1}
    ) without_value
    where (select count(*) from valued) <= ${p.limit}`;
}
