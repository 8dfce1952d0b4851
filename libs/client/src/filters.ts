import { TASK_FILTER_OPS } from "./filter-ops.js";
import type { components } from "./schema.js";

// The generated TaskFilter takes any value; these types add which ops and values each field takes, so a refused condition does not compile.

type SchemaCondition = Extract<components["schemas"]["TaskFilter"], { field: unknown }>;

export { TASK_FILTER_OPS };

export type FilterField = keyof typeof TASK_FILTER_OPS;
export type FilterOp = SchemaCondition["op"];
type OpsOf<F extends FilterField> = (typeof TASK_FILTER_OPS)[F][number];

/** A calendar day, `YYYY-MM-DD`; as a time, 00:00 UTC that day. */
export type DateOnly = `${number}-${number}-${number}`;
/** An RFC 3339 date-time with an offset, e.g. `2026-11-22T09:00:00Z` or `2026-11-22T10:00:00+01:00`. */
export type DateTime = `${number}-${number}-${number}T${string}`;

/** What a condition on each field compares with: one value (`in` and `nin` take a list of them). A test holds each to the value the API checks. */
export interface FilterValues {
  status: components["schemas"]["Task"]["status"];
  priority: NonNullable<components["schemas"]["Task"]["priority"]>;
  /** A project id, `prj_…`. */
  project_id: string;
  /** A task id, `T-<n>`. */
  parent_task_id: string;
  /** A user id, `usr_…`, or `me` for the credential's user. */
  owner_id: string;
  /** A user id, `usr_…`, or `me`: `contains` one, `in` any of several, `is_null` assigned to nobody. */
  assignee_ids: string;
  /** A label id, `lbl_…`: `contains` it, `in` any of several, `nin` none of them, `is_null` no label. */
  label_ids: string;
  archived: boolean;
  is_blocked: boolean;
  /** A date-time with an offset, or a day meaning 00:00 UTC: compared with the due date exactly. */
  due_date: DateTime | DateOnly;
  /** An RFC 3339 date-time with an offset, e.g. `2026-11-22T09:00:00Z`. */
  created_at: string;
  /** An RFC 3339 date-time with an offset, e.g. `2026-11-22T09:00:00Z`. */
  updated_at: string;
  story_points: number;
  title: string;
  /** Full text in web-search syntax: words (all must match), "a phrase", `or`, `-word`. */
  text: string;
}

/** The fields that take op `O`. */
export type FieldsWith<O extends FilterOp> = { [F in FilterField]: O extends OpsOf<F> ? F : never }[FilterField];

type ValueOf<F extends FilterField, O extends FilterOp> = O extends "in" | "nin" ? FilterValues[F][] : O extends "is_null" ? boolean : FilterValues[F];

/** A condition whose op is one its field takes and whose value is of the field's type; with no arguments, the union of them all. */
export type TaskCondition<F extends FilterField = FilterField, O extends FilterOp = FilterOp> = F extends FilterField
  ? O extends OpsOf<F>
    ? { field: F; op: O; value: ValueOf<F, O> }
    : never
  : never;

/** A value a custom field holds or is compared with: text, a number, a date (YYYY-MM-DD), an option or user id, a boolean, a URL. */
export type CustomValue = string | number | boolean;
/** A condition on an organization's custom field: its type (known to the API) decides which ops and values it takes. */
export type CustomCondition = { field: `custom.${string}`; op: FilterOp; value: CustomValue | CustomValue[] };

/** A filter of POST /v1/tasks/search, typed field by field: a condition, or and/or/not of filters. */
export type TaskFilter = TaskCondition | CustomCondition | { and: TaskFilter[] } | { or: TaskFilter[] } | { not: TaskFilter };

type Filters = [TaskFilter, ...TaskFilter[]];

// TypeScript cannot carry the callers' constraint (F takes O) through TaskCondition<F, O> while F is generic.
const condition = <F extends FilterField, O extends FilterOp>(field: F, op: O, value: ValueOf<F, O>) => ({ field, op, value }) as TaskCondition<F, O>;

/**
 * Builds the filter of a search: `where.and(where.in("status", ["TODO"]), where.matches("invoice"))`, as the plain JSON the API takes.
 * Limits the types cannot state (at most 50 conditions, 5 levels) are checked by the API.
 */
export const where = {
  /** Every filter matches. */
  and: (...filters: Filters): { and: TaskFilter[] } => ({ and: filters }),
  /** At least one filter matches. */
  or: (...filters: Filters): { or: TaskFilter[] } => ({ or: filters }),
  /** The filter does not match (exactly: a task without the value matches `not(eq)`). */
  not: (filter: TaskFilter): { not: TaskFilter } => ({ not: filter }),
  /** The field equals the value (false on a task without the value). */
  eq: <F extends FieldsWith<"eq">>(field: F, value: FilterValues[F]) => condition(field, "eq", value),
  /** The field differs from the value (true on a task without the value). */
  neq: <F extends FieldsWith<"neq">>(field: F, value: FilterValues[F]) => condition(field, "neq", value),
  /** The field is one of the values (1 to 100 of them). */
  in: <F extends FieldsWith<"in">>(field: F, values: readonly FilterValues[F][]) => condition(field, "in", [...values]),
  /** The field is none of the values (true on a task without the value). */
  nin: <F extends FieldsWith<"nin">>(field: F, values: readonly FilterValues[F][]) => condition(field, "nin", [...values]),
  lt: <F extends FieldsWith<"lt">>(field: F, value: FilterValues[F]) => condition(field, "lt", value),
  lte: <F extends FieldsWith<"lte">>(field: F, value: FilterValues[F]) => condition(field, "lte", value),
  gt: <F extends FieldsWith<"gt">>(field: F, value: FilterValues[F]) => condition(field, "gt", value),
  gte: <F extends FieldsWith<"gte">>(field: F, value: FilterValues[F]) => condition(field, "gte", value),
  /** The task has no value for the field (`false`: it has one). */
  isNull: <F extends FieldsWith<"is_null">>(field: F, isNull = true) => condition(field, "is_null", isNull),
  /** The title contains the text, whatever the case; `assignee_ids`: the task is assigned to that user (or `me`). */
  contains: <F extends FieldsWith<"contains">>(field: F, value: FilterValues[F]) => condition(field, "contains", value),
  /** Full text over title, description and notes, as `q` of GET /v1/tasks. */
  matches: (text: string) => condition("text", "matches", text),
  /**
   * A custom field by its key: `where.custom("estimate", "gte", 3)`. Its type decides the ops (text: eq, neq, contains,
   * is_null; number and date: eq, neq, lt, lte, gt, gte, is_null; select: eq, neq, in, nin, is_null; multi_select:
   * contains, in, is_null; user: eq, in, is_null; checkbox: eq; url: eq, is_null); the API refuses others.
   */
  custom: (key: string, op: FilterOp, value: CustomValue | readonly CustomValue[]): CustomCondition => ({
    field: `custom.${key}`,
    op,
    value: Array.isArray(value) ? [...value] : (value as CustomValue),
  }),
};
