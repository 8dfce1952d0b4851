import { z } from "zod";
import { OpaqueId, Text } from "./common.js";
import { DateTimeInput } from "./dates.js";
import { CUSTOM_KEY_SOURCE, TaskPriority, TaskRef, TaskStatus } from "./tasks.js";

/**
 * The grammar of a task filter, stated once: the checker, the document's text, the tasks
 * service's SQL and the typed client's table of ops all read FILTER_FIELDS.
 */

export const FILTER_OPS = ["eq", "neq", "in", "nin", "lt", "lte", "gt", "gte", "is_null", "contains", "matches"] as const;
export type FilterOp = (typeof FILTER_OPS)[number];
export const FILTER_LIMITS = { conditions: 50, depth: 5, listItems: 100 } as const;

/** At least one word, so that it can match anything at all. */
export const SearchText = Text.min(1)
  .max(200)
  .refine((s) => /[\p{L}\p{N}]/u.test(s), { message: "must contain at least one word (a letter or a digit)" });

const Instant = DateTimeInput;

/** `me` is the credential's own user, wherever a user id is a value to match. */
export const ME = "me";
const UserValue = OpaqueId;

type FieldRow = { ops: readonly FilterOp[]; value: z.ZodType; says: string };

export const FILTER_FIELDS = {
  status: { ops: ["eq", "neq", "in", "nin"], value: TaskStatus, says: "a status" },
  priority: { ops: ["eq", "neq", "in", "nin", "is_null"], value: TaskPriority, says: "a priority" },
  project_id: { ops: ["eq", "neq", "in", "nin", "is_null"], value: OpaqueId, says: "a project id, `prj_…`" },
  parent_task_id: { ops: ["eq", "neq", "in", "nin", "is_null"], value: TaskRef, says: "a task id, T-<n>" },
  owner_id: { ops: ["eq", "neq", "in", "nin"], value: UserValue, says: "a user id, `usr_…`, or `me`" },
  assignee_ids: { ops: ["contains", "in", "is_null"], value: UserValue, says: "a user id, `usr_…`, or `me`" },
  label_ids: { ops: ["contains", "in", "nin", "is_null"], value: OpaqueId, says: "a label id, `lbl_…`" },
  archived: { ops: ["eq", "neq"], value: z.boolean(), says: "a boolean" },
  is_blocked: { ops: ["eq", "neq"], value: z.boolean(), says: "a boolean" },
  due_date: { ops: ["eq", "neq", "lt", "lte", "gt", "gte", "is_null"], value: Instant, says: "a time" },
  created_at: { ops: ["lt", "lte", "gt", "gte"], value: Instant, says: "a time" },
  updated_at: { ops: ["lt", "lte", "gt", "gte"], value: Instant, says: "a time" },
  story_points: { ops: ["eq", "neq", "lt", "lte", "gt", "gte", "in", "nin", "is_null"], value: z.number().min(0).max(1000), says: "a number, 0-1000" },
  title: { ops: ["eq", "neq", "contains"], value: Text.min(1).max(500), says: "text, 1-500 characters" },
  text: { ops: ["matches"], value: SearchText, says: "words in web-search syntax" },
} as const satisfies Record<string, FieldRow>;
export type FilterField = keyof typeof FILTER_FIELDS;
export type OpsOf<F extends FilterField> = (typeof FILTER_FIELDS)[F]["ops"][number];

const FIELDS = Object.keys(FILTER_FIELDS) as FilterField[];

export type FilterValue = string | number | boolean | Array<string | number>;
/** `custom.<key>`: an organization's own field, whose type (known to the tasks service) decides its ops and values. */
export const CUSTOM_FIELD_PREFIX = "custom.";
export const CUSTOM_FILTER_FIELD = new RegExp(`^custom\\.${CUSTOM_KEY_SOURCE}$`);
export type CustomFilterField = `custom.${string}`;
export type CustomCondition = { field: CustomFilterField; op: FilterOp; value: FilterValue };
/** The value is checked at run time, by the field's row (or the custom field's type). */
export type TaskCondition = { [F in FilterField]: { field: F; op: OpsOf<F>; value: FilterValue } }[FilterField] | CustomCondition;
export const isCustomCondition = (c: TaskCondition): c is CustomCondition => c.field.startsWith(CUSTOM_FIELD_PREFIX);
export type TaskFilter = { and: TaskFilter[] } | { or: TaskFilter[] } | { not: TaskFilter } | TaskCondition;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
type Issue = { path: PropertyKey[]; message: string };

/** By hand rather than a zod union, whose failure reports its own path: a client needs the pointer of the wrong part. */
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
  if (typeof field === "string" && field.startsWith(CUSTOM_FIELD_PREFIX)) {
    checkCustom(node, path, issues, field);
    return;
  }
  if (typeof field !== "string" || !Object.hasOwn(FILTER_FIELDS, field)) {
    issues.push({ path: [...path, "field"], message: `must be one of ${FIELDS.join(", ")}, or custom.<key> for a custom field` });
    return;
  }
  const row: FieldRow = FILTER_FIELDS[field as FilterField];
  const op = node["op"];
  if (typeof op !== "string" || !(row.ops as readonly string[]).includes(op)) {
    issues.push({ path: [...path, "op"], message: `must be one of ${row.ops.join(", ")} for ${field}` });
    return;
  }
  const valueSchema = op === "is_null" ? z.boolean() : op === "in" || op === "nin" ? z.array(row.value).min(1).max(FILTER_LIMITS.listItems) : row.value;
  if (!("value" in node)) {
    issues.push({ path: [...path, "value"], message: "is required" });
    return;
  }
  const parsed = valueSchema.safeParse(node["value"]);
  if (!parsed.success) for (const i of parsed.error.issues) issues.push({ path: [...path, "value", ...i.path], message: i.message });
}

const CustomScalar = z.union([z.string().max(10_000), z.number(), z.boolean()]);

/** The shape only: which ops and values the field takes is its type's, checked by the tasks service with the organization's fields. */
function checkCustom(node: Record<string, unknown>, path: PropertyKey[], issues: Issue[], field: string): void {
  if (!CUSTOM_FILTER_FIELD.test(field)) {
    issues.push({ path: [...path, "field"], message: "must be custom.<key>, with the key of a custom field" });
    return;
  }
  const op = node["op"];
  if (typeof op !== "string" || !(FILTER_OPS as readonly string[]).includes(op)) {
    issues.push({ path: [...path, "op"], message: `must be one of ${FILTER_OPS.join(", ")}` });
    return;
  }
  if (!("value" in node)) {
    issues.push({ path: [...path, "value"], message: "is required" });
    return;
  }
  const schema = op === "in" || op === "nin" ? z.array(CustomScalar).min(1).max(FILTER_LIMITS.listItems) : CustomScalar;
  const parsed = schema.safeParse(node["value"]);
  if (!parsed.success) for (const i of parsed.error.issues) issues.push({ path: [...path, "value", ...i.path], message: i.message });
}

const OPS_IN_WORDS = FIELDS.map((f) => `\`${f}\`: ${FILTER_FIELDS[f].ops.join(", ")}`).join("; ");
const VALUES_IN_WORDS = FIELDS.map((f) => `\`${f}\`: ${FILTER_FIELDS[f].says}`).join("; ");
const TIMES = FIELDS.filter((f) => FILTER_FIELDS[f].value === Instant).join(", ");

const AND_DOC = { description: "Every filter must match.", examples: [[{ field: "status", op: "eq", value: "TODO" }]] };
const OR_DOC = { description: "At least one filter must match.", examples: [[{ field: "priority", op: "eq", value: "URGENT" }]] };
const NOT_DOC = { description: "The filter must not match.", examples: [{ field: "is_blocked", op: "eq", value: true }] };
const FILTER_DOC = {
  description: `A filter: \`{"and": [filters]}\`, \`{"or": [filters]}\`, \`{"not": filter}\` or a condition \`{"field", "op", "value"}\`. At most ${FILTER_LIMITS.conditions} conditions and ${FILTER_LIMITS.depth} levels.`,
  examples: [
    {
      and: [
        { field: "status", op: "in", value: ["TODO", "IN_PROGRESS"] },
        { field: "text", op: "matches", value: "invoice export" },
      ],
    },
  ],
};
const group = (name: "and" | "or", doc: typeof AND_DOC) => ({
  type: "object",
  title: name,
  required: [name],
  additionalProperties: false,
  properties: {
    [name]: { ...doc, type: "array", minItems: 1, maxItems: FILTER_LIMITS.conditions, items: { $ref: "#/components/schemas/TaskFilter" } },
  },
});

export const TaskFilterSchema = z
  // A search that names nothing answered every task.
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
      group("and", AND_DOC),
      group("or", OR_DOC),
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
            // One pattern rather than an enum beside a pattern, which generated clients read as any value.
            pattern: `^(?:${FIELDS.join("|")}|custom\\.${CUSTOM_KEY_SOURCE})$`,
            description:
              "What the condition looks at; `text` is the full text of title, description and notes. On `assignee_ids`, `contains` matches a task assigned to that user, `in` one assigned to any of them, `is_null: true` one assigned to nobody; on `label_ids`, `contains` a task with that label, `in` one with any of them, `nin` one with none of them, `is_null: true` one with no label. `custom.<key>` is a custom field, whose ops go by its type: text eq, neq, contains, is_null; number and date eq, neq, lt, lte, gt, gte, is_null; select eq, neq, in, nin, is_null; multi_select contains (has that option), in (has any of them), is_null; user eq, in, is_null (`me` allowed); checkbox eq (false matches a task left unchecked); url eq, is_null.",
            examples: ["status"],
          },
          op: {
            type: "string",
            enum: [...FILTER_OPS],
            description: `How it compares; each field takes only some of them (${OPS_IN_WORDS}), and an op the field does not take is refused.`,
            examples: ["in"],
          },
          value: {
            description: `The value, of the field's type (${VALUES_IN_WORDS}); an array for \`in\` and \`nin\`; a boolean for \`is_null\`. A time (${TIMES}) is a date-time with an offset, or a date meaning 00:00 UTC that day, compared exactly.`,
            examples: [["TODO", "IN_PROGRESS"]],
          },
        },
      },
    ],
  });
