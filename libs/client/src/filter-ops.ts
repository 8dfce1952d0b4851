// Generated from the API's filter table by scripts/gen-client-filters.mjs (npm run openapi): do not edit.
import type { components } from "./schema.js";

type SchemaCondition = Extract<components["schemas"]["TaskFilter"], { field: unknown }>;

/**
 * The ops each field of a search condition takes, as POST /v1/tasks/search checks them. The
 * `satisfies` keeps it to the fields and ops of the generated schema, and names every field.
 */
export const TASK_FILTER_OPS = {
  status: ["eq", "neq", "in", "nin"],
  priority: ["eq", "neq", "in", "nin", "is_null"],
  project_id: ["eq", "neq", "in", "nin", "is_null"],
  parent_task_id: ["eq", "neq", "in", "nin", "is_null"],
  owner_id: ["eq", "neq", "in", "nin"],
  assignee_ids: ["contains", "in", "is_null"],
  label_ids: ["contains", "in", "nin", "is_null"],
  archived: ["eq", "neq"],
  is_blocked: ["eq", "neq"],
  due_date: ["eq", "neq", "lt", "lte", "gt", "gte", "is_null"],
  created_at: ["lt", "lte", "gt", "gte"],
  updated_at: ["lt", "lte", "gt", "gte"],
  story_points: ["eq", "neq", "lt", "lte", "gt", "gte", "in", "nin", "is_null"],
  title: ["eq", "neq", "contains"],
  text: ["matches"],
} as const satisfies Record<SchemaCondition["field"], readonly SchemaCondition["op"][]>;
