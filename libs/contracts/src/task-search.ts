import { z } from "zod";
import { PageQuery } from "./common.js";
import { FILTER_FIELDS, type FilterField, TaskFilterSchema } from "./task-filter.js";
import { Instant } from "./rewinds.js";
import { CUSTOM_KEY_SOURCE, TaskRef } from "./tasks.js";

/** In this order in the document, the default first. */
export const TASK_SORTS = ["updated_at", "created_at", "due_date", "priority", "story_points"] as const satisfies readonly FilterField[];
export type TaskSortKey = (typeof TASK_SORTS)[number];
/** A number or date custom field's key (the tasks service checks its type). */
export const CUSTOM_SORT = new RegExp(`^-?custom\\.${CUSTOM_KEY_SOURCE}$`);
export type CustomSort = `custom.${string}` | `-custom.${string}`;
export const TaskSort = z
  .union([
    z.enum([...TASK_SORTS, ...TASK_SORTS.map((k) => `-${k}` as const)]),
    // A string for the document (a custom check would be any value there); typed as what it matches.
    z.string().regex(CUSTOM_SORT, { message: "must be a sort key, or custom.<key> of a number or date field" }) as unknown as z.ZodType<CustomSort>,
  ])
  .meta({
    description:
      "The order: a key (or `custom.<key>` of a number or date custom field), `-` in front for descending. Ties by id; tasks without the value last.",
    examples: ["-updated_at"],
  });
export type TaskSort = z.infer<typeof TaskSort>;
export const isCustomSort = (s: TaskSort): s is CustomSort => CUSTOM_SORT.test(s);

/** `a,b` or the parameter repeated. */
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
/** User ids, `me` and `none`, comma-separated or the parameter repeated. */
const UserList = (() => {
  const list = z.array(FILTER_FIELDS.assignee_ids.value).min(1).max(10);
  return z.union(
    [
      z
        .string()
        .transform((s) => s.split(","))
        .pipe(list),
      list,
    ],
    {
      error: "must be one or more user ids, `me` or `none`, comma-separated (at most 10)",
    },
  );
})();
const BoolParam = z.union([z.boolean(), z.enum(["true", "false"]).transform((v) => v === "true")], { message: "must be true or false" });

// No examples for filters that name an object: "Try it out" would send them, and an id the caller's organization lacks is a 404.
export const ListTasksQuery = PageQuery.extend({
  status: listOf(FILTER_FIELDS.status.value.options)
    .optional()
    .meta({ description: "Only tasks in one of these statuses, comma-separated (`TODO,BLOCKED`).", examples: ["TODO"] }),
  priority: listOf(FILTER_FIELDS.priority.value.options)
    .optional()
    .meta({ description: "Only tasks of one of these priorities, comma-separated (`HIGH,URGENT`).", examples: ["HIGH,URGENT"] }),
  project_id: FILTER_FIELDS.project_id.value.optional().meta({ description: "Only tasks in this project (its id, `prj_…`)." }),
  parent_task_id: FILTER_FIELDS.parent_task_id.value.optional().meta({ description: "Only the subtasks of this task (its id, T-<n>)." }),
  series_task_id: TaskRef.optional().meta({ description: "Only the occurrences made from this recurring task (its id, T-<n>)." }),
  assignee_id: UserList.optional().meta({
    description:
      "Only tasks assigned to one of these users: user ids, `me` (the credential's user) or `none` (assigned to nobody), comma-separated and freely mixed; a task matches when any of them does.",
    examples: ["me"],
  }),
  label_id: z
    .union(
      [
        z
          .string()
          .transform((s) => s.split(","))
          .pipe(z.array(FILTER_FIELDS.label_ids.value).min(1).max(20)),
        z.array(FILTER_FIELDS.label_ids.value).min(1).max(20),
      ],
      {
        error: "must be one or more label ids, comma-separated (at most 20)",
      },
    )
    .optional()
    .meta({
      description:
        "Only tasks with one of these labels (label ids, comma-separated): a task matches when it has any of them; an id no label has matches nothing.",
      examples: ["lbl_4mQ8xT2pK7nD3vB9rL5sW1"],
    }),
  owner_id: FILTER_FIELDS.owner_id.value
    .optional()
    .meta({ description: "Only tasks owned by this user (its id, or `me` for the credential's user).", examples: ["me"] }),
  archived: BoolParam.default(false).meta({ description: "Archived tasks instead of current ones (default false).", examples: [false] }),
  created_gte: FILTER_FIELDS.created_at.value
    .optional()
    .meta({ description: "Only tasks created at or after this time (ISO 8601).", examples: ["2026-01-01T00:00:00Z"] }),
  created_lt: FILTER_FIELDS.created_at.value
    .optional()
    .meta({ description: "Only tasks created before this time (ISO 8601).", examples: ["2030-01-01T00:00:00Z"] }),
  updated_gte: FILTER_FIELDS.updated_at.value.optional().meta({
    description: "Only tasks changed at or after this time (ISO 8601). With `sort=updated_at`, the way to keep a copy in sync.",
    examples: ["2026-01-01T00:00:00Z"],
  }),
  updated_lt: FILTER_FIELDS.updated_at.value
    .optional()
    .meta({ description: "Only tasks changed before this time (ISO 8601).", examples: ["2030-01-01T00:00:00Z"] }),
  due_gte: FILTER_FIELDS.due_date.value.optional().meta({
    description: "Only tasks due at or after this time: a date-time with an offset, or a date meaning 00:00 UTC that day.",
    examples: ["2026-01-01"],
  }),
  due_lt: FILTER_FIELDS.due_date.value.optional().meta({
    description: "Only tasks due before this time: a date-time with an offset, or a date meaning 00:00 UTC that day.",
    examples: ["2030-01-01"],
  }),
  is_blocked: BoolParam.optional().meta({ description: "`true`: only tasks with an open blocker; `false`: only tasks without one.", examples: [false] }),
  q: FILTER_FIELDS.text.value.optional().meta({
    description:
      'Full text over title, description and notes, in web-search syntax: words (all must match), "a phrase", `or`, `-word`. Case and accents do not matter.',
    examples: ["announcement"],
  }),
  sort: TaskSort.default("-updated_at"),
  as_of: Instant.optional().meta({
    description:
      "The list as it stood at this instant (date-time with an offset, such as `2026-11-23T09:30:00Z`), from the tasks' versions. Only with `status`, `project_id`, `archived` (the state now: archiving is not recorded in versions) and `sort` `-updated_at` or `updated_at`.",
  }),
}).strict();
export type ListTasksQuery = z.infer<typeof ListTasksQuery>;

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
