import { z } from "zod";
import { OpaqueId, PageQuery, Text } from "./common.js";
import { DateTimeInput } from "./dates.js";
import { TaskPriority, TaskRef, TaskStatus } from "./tasks.js";

/**
 * Finding tasks: the list's filters and sort, the search body's filter tree, and the one tree both
 * compile to (the tasks service turns a TaskFilter into SQL; nothing else reads the query).
 */

export const TASK_SORTS = ["updated_at", "created_at", "due_date", "priority", "story_points"] as const;
export type TaskSortKey = (typeof TASK_SORTS)[number];
export const TaskSort = z
  .enum([...TASK_SORTS, ...TASK_SORTS.map((k) => `-${k}` as const)])
  .meta({ description: "The order: a key, `-` in front for descending. Ties by id; tasks without the value last.", examples: ["-updated_at"] });
export type TaskSort = z.infer<typeof TaskSort>;

/** Full text in web-search syntax: at least one word, so that it can match anything at all. */
export const SearchText = Text.min(1)
  .max(200)
  .refine((s) => /[\p{L}\p{N}]/u.test(s), { message: "must contain at least one word (a letter or a digit)" });

/** A query list: `a,b` or the parameter repeated; parsed again unchanged (an array passes through). */
export function listOf<const V extends readonly string[]>(values: V) {
  const list = z.array(z.enum(values)).min(1).max(10);
  return z.union(
    [
      z
        .string()
        .transform((s) => s.split(",") as Array<V[number]>)
        .pipe(list),
      list,
    ],
    {
      error: `must be one or more of ${values.join(", ")}, comma-separated (at most 10)`,
    },
  );
}
const BoolParam = z.union([z.boolean(), z.enum(["true", "false"]).transform((v) => v === "true")], { message: "must be true or false" });
/** A date-time with an offset, or a bare date taken as 00:00 UTC, within the days the API accepts. */
const Instant = DateTimeInput;

// No examples for the filters that name an object: "Try it out" would send them, and an id the
// caller's organization lacks is a 404 (a filter left empty is not sent).
export const ListTasksQuery = PageQuery.extend({
  status: listOf(TaskStatus.options)
    .optional()
    .meta({ description: "Only tasks in one of these statuses, comma-separated (`TODO,BLOCKED`).", examples: ["TODO"] }),
  priority: listOf(TaskPriority.options)
    .optional()
    .meta({ description: "Only tasks of one of these priorities, comma-separated (`HIGH,URGENT`).", examples: ["HIGH,URGENT"] }),
  project_id: OpaqueId.optional().meta({ description: "Only tasks in this project (its id, `prj_…`)." }),
  parent_task_id: TaskRef.optional().meta({ description: "Only the subtasks of this task (its id, T-<n>)." }),
  series_task_id: TaskRef.optional().meta({ description: "Only the occurrences made from this recurring task (its id, T-<n>)." }),
  archived: BoolParam.default(false).meta({ description: "Archived tasks instead of current ones (default false).", examples: [false] }),
  created_gte: Instant.optional().meta({ description: "Only tasks created at or after this time (ISO 8601).", examples: ["2026-01-01T00:00:00Z"] }),
  created_lt: Instant.optional().meta({ description: "Only tasks created before this time (ISO 8601).", examples: ["2030-01-01T00:00:00Z"] }),
  updated_gte: Instant.optional().meta({
    description: "Only tasks changed at or after this time (ISO 8601). With `sort=updated_at`, the way to keep a copy in sync.",
    examples: ["2026-01-01T00:00:00Z"],
  }),
  updated_lt: Instant.optional().meta({ description: "Only tasks changed before this time (ISO 8601).", examples: ["2030-01-01T00:00:00Z"] }),
  due_gte: Instant.optional().meta({
    description: "Only tasks due at or after this time: a date-time with an offset, or a date meaning 00:00 UTC that day.",
    examples: ["2026-01-01"],
  }),
  due_lt: Instant.optional().meta({
    description: "Only tasks due before this time: a date-time with an offset, or a date meaning 00:00 UTC that day.",
    examples: ["2030-01-01"],
  }),
  is_blocked: BoolParam.optional().meta({ description: "`true`: only tasks with an open blocker; `false`: only tasks without one.", examples: [false] }),
  q: SearchText.optional().meta({
    description:
      'Full text over title, description and notes, in web-search syntax: words (all must match), "a phrase", `or`, `-word`. Case and accents do not matter.',
    examples: ["announcement"],
  }),
  sort: TaskSort.default("-updated_at"),
}).strict();
export type ListTasksQuery = z.infer<typeof ListTasksQuery>;

// ---------------------------------------------------------------------------------------------
// The filter tree of POST /v1/tasks/search

export const FILTER_FIELDS = {
  status: ["eq", "neq", "in", "nin"],
  priority: ["eq", "neq", "in", "nin", "is_null"],
  project_id: ["eq", "neq", "in", "nin", "is_null"],
  parent_task_id: ["eq", "neq", "in", "nin", "is_null"],
  archived: ["eq", "neq"],
  is_blocked: ["eq", "neq"],
  due_date: ["eq", "neq", "lt", "lte", "gt", "gte", "is_null"],
  created_at: ["lt", "lte", "gt", "gte"],
  updated_at: ["lt", "lte", "gt", "gte"],
  story_points: ["eq", "neq", "lt", "lte", "gt", "gte", "in", "nin", "is_null"],
  title: ["eq", "neq", "contains"],
  text: ["matches"],
} as const satisfies Record<string, readonly string[]>;
export type FilterField = keyof typeof FILTER_FIELDS;
export const FILTER_OPS = ["eq", "neq", "in", "nin", "lt", "lte", "gt", "gte", "is_null", "contains", "matches"] as const;
export type FilterOp = (typeof FILTER_OPS)[number];
export const FILTER_LIMITS = { conditions: 50, depth: 5, listItems: 100 } as const;

/** One value of each field, as a condition states it. */
const VALUES: Record<FilterField, z.ZodType> = {
  status: TaskStatus,
  priority: TaskPriority,
  project_id: OpaqueId,
  parent_task_id: TaskRef,
  archived: z.boolean(),
  is_blocked: z.boolean(),
  due_date: Instant,
  created_at: Instant,
  updated_at: Instant,
  story_points: z.number().min(0).max(1000),
  title: Text.min(1).max(500),
  text: SearchText,
};

export type FilterValue = string | number | boolean | Array<string | number>;
export type TaskCondition = { field: FilterField; op: FilterOp; value: FilterValue };
export type TaskFilter = { and: TaskFilter[] } | { or: TaskFilter[] } | { not: TaskFilter } | TaskCondition;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
type Issue = { path: PropertyKey[]; message: string };

/**
 * Checks a filter tree by hand rather than with a zod union: a union that fails reports its own
 * path, and a client needs the pointer of the part that is wrong (`/filter/and/2/value`).
 */
function checkFilter(node: unknown, path: PropertyKey[], depth: number, issues: Issue[], counted: { n: number }): void {
  if (depth > FILTER_LIMITS.depth) {
    issues.push({ path, message: `is nested too deep: a filter may be at most ${FILTER_LIMITS.depth} levels deep` });
    return;
  }
  if (!isRecord(node)) {
    issues.push({ path, message: "must be an object: {and: [...]}, {or: [...]}, {not: {...}} or a condition {field, op, value}" });
    return;
  }
  const keys = Object.keys(node);
  const group = keys.find((k) => k === "and" || k === "or" || k === "not");
  if (group !== undefined) {
    for (const k of keys) if (k !== group) issues.push({ path: [...path, k], message: `is not allowed beside "${group}"` });
    const inner = node[group];
    if (group === "not") {
      checkFilter(inner, [...path, group], depth + 1, issues, counted);
      return;
    }
    if (!Array.isArray(inner) || inner.length < 1 || inner.length > FILTER_LIMITS.conditions) {
      issues.push({ path: [...path, group], message: `must be an array of 1 to ${FILTER_LIMITS.conditions} filters` });
      return;
    }
    for (const [i, child] of inner.entries()) checkFilter(child, [...path, group, i], depth + 1, issues, counted);
    return;
  }
  counted.n++;
  for (const k of keys)
    if (k !== "field" && k !== "op" && k !== "value") issues.push({ path: [...path, k], message: "is not a key of a condition (field, op, value)" });
  const field = node["field"];
  if (typeof field !== "string" || !Object.hasOwn(FILTER_FIELDS, field)) {
    issues.push({ path: [...path, "field"], message: `must be one of ${Object.keys(FILTER_FIELDS).join(", ")}` });
    return;
  }
  const ops: readonly string[] = FILTER_FIELDS[field as FilterField];
  const op = node["op"];
  if (typeof op !== "string" || !ops.includes(op)) {
    issues.push({ path: [...path, "op"], message: `must be one of ${ops.join(", ")} for ${field}` });
    return;
  }
  const valueSchema =
    op === "is_null"
      ? z.boolean()
      : op === "in" || op === "nin"
        ? z
            .array(VALUES[field as FilterField])
            .min(1)
            .max(FILTER_LIMITS.listItems)
        : VALUES[field as FilterField];
  if (!("value" in node)) {
    issues.push({ path: [...path, "value"], message: "is required" });
    return;
  }
  const parsed = valueSchema.safeParse(node["value"]);
  if (!parsed.success) for (const i of parsed.error.issues) issues.push({ path: [...path, "value", ...i.path], message: i.message });
}

const AND_DOC = { description: "Every filter must match.", examples: [[{ field: "status", op: "eq", value: "TODO" }]] };
const OR_DOC = { description: "At least one filter must match.", examples: [[{ field: "priority", op: "eq", value: "URGENT" }]] };
const NOT_DOC = { description: "The filter must not match.", examples: [{ field: "is_blocked", op: "eq", value: true }] };
const FILTER_DOC = {
  description:
    'A filter: `{"and": [filters]}`, `{"or": [filters]}`, `{"not": filter}` or a condition `{"field", "op", "value"}`. At most 50 conditions and 5 levels.',
  examples: [
    {
      and: [
        { field: "status", op: "in", value: ["TODO", "IN_PROGRESS"] },
        { field: "text", op: "matches", value: "invoice export" },
      ],
    },
  ],
};

/** The filter tree: checked by checkFilter; its JSON Schema is written out for the document. */
export const TaskFilterSchema = z
  // A body without one is refused (the check below would take undefined for a condition and
  // name its parts): a search that names nothing answered every task.
  .custom<TaskFilter>((v) => v !== undefined, {
    abort: true,
    message: 'is required: to find every current task, {"field": "archived", "op": "eq", "value": false}',
  })
  .superRefine((v, ctx) => {
    const issues: Issue[] = [];
    const counted = { n: 0 };
    checkFilter(v, [], 1, issues, counted);
    if (counted.n > FILTER_LIMITS.conditions)
      issues.unshift({ path: [], message: `has ${counted.n} conditions; at most ${FILTER_LIMITS.conditions} are allowed` });
    for (const i of issues) ctx.addIssue({ code: "custom", path: i.path, message: i.message });
  })
  .meta({
    ...FILTER_DOC,
    oneOf: [
      {
        type: "object",
        title: "and",
        required: ["and"],
        additionalProperties: false,
        properties: { and: { ...AND_DOC, type: "array", minItems: 1, maxItems: 50, items: { $ref: "#/components/schemas/TaskFilter" } } },
      },
      {
        type: "object",
        title: "or",
        required: ["or"],
        additionalProperties: false,
        properties: { or: { ...OR_DOC, type: "array", minItems: 1, maxItems: 50, items: { $ref: "#/components/schemas/TaskFilter" } } },
      },
      {
        type: "object",
        title: "not",
        required: ["not"],
        additionalProperties: false,
        properties: { not: { ...NOT_DOC, $ref: "#/components/schemas/TaskFilter" } },
      },
      {
        type: "object",
        title: "condition",
        required: ["field", "op", "value"],
        additionalProperties: false,
        properties: {
          field: {
            type: "string",
            enum: Object.keys(FILTER_FIELDS),
            description: "What the condition looks at; `text` is the full text of title, description and notes.",
            examples: ["status"],
          },
          op: {
            type: "string",
            enum: [...FILTER_OPS],
            description: "How it compares; each field takes only some of them, and an op the field does not take is refused.",
            examples: ["in"],
          },
          value: {
            description:
              "The value, of the field's type; an array for `in` and `nin`; a boolean for `is_null`. A time (due_date, created_at, updated_at) is a date-time with an offset, or a date meaning 00:00 UTC that day, compared exactly.",
            examples: [["TODO", "IN_PROGRESS"]],
          },
        },
      },
    ],
  });

export const SearchTasksBody = z.strictObject({
  filter: TaskFilterSchema.meta({
    description: 'Which tasks (required). Every current task: `{"field": "archived", "op": "eq", "value": false}`.',
    examples: [{ field: "status", op: "in", value: ["TODO", "IN_PROGRESS"] }],
  }),
  sort: TaskSort.default("-updated_at"),
  limit: PageQuery.shape.limit,
  after: PageQuery.shape.after.meta({
    description: "The `next_cursor` of the previous page; the rest of the body must be the same as for that page.",
    examples: ["eyJwIjoiV…"],
  }),
});
export type SearchTasksBody = z.infer<typeof SearchTasksBody>;
