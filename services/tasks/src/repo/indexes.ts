import type { ConcurrentIndex } from "@tasksvc/db";
import { TEXT_VECTOR } from "./task-filter-sql.js";
import { sortOf } from "./task-search.js";

const bySort = (name: string, sort: Parameters<typeof sortOf>[0]): ConcurrentIndex => {
  const s = sortOf(sort);
  const dir = s.desc ? "desc" : "asc";
  return { name, definition: `on tasks (organization_id, archived, (${s.expr}) ${dir}, number ${dir})` };
};

/** Built without blocking writers; each on the exact expression the queries write (a key that may be missing has one per direction). */
export const TASK_INDEXES: readonly ConcurrentIndex[] = [
  bySort("tasks_created_idx", "-created_at"),
  bySort("tasks_due_asc_idx", "due_date"),
  bySort("tasks_due_desc_idx", "-due_date"),
  bySort("tasks_priority_asc_idx", "priority"),
  bySort("tasks_priority_desc_idx", "-priority"),
  bySort("tasks_points_asc_idx", "story_points"),
  bySort("tasks_points_desc_idx", "-story_points"),
  {
    name: "tasks_text_idx",
    definition: `on tasks using gin ((${TEXT_VECTOR}))`,
    // The planner's guess for a word it has no statistics of is ~0.3% of the rows: at a million
    // tasks it then prefers walking the list order (11 s for a word of 50 tasks) to the text index
    // (0.3 ms). A larger sample of words keeps rare words rare.
    afterBuild: "alter index tasks_text_idx alter column 1 set statistics 2000",
  },
  { name: "tasks_projects_idx", definition: "on tasks using gin (project_ids)" },
  // A user is assigned a few of the tasks of their organizations, so the index need not lead with the organization.
  { name: "tasks_assignees_idx", definition: "on tasks using gin (assignee_ids)" },
  { name: "tasks_labels_idx", definition: "on tasks using gin (label_ids)" },
  // `@>` of a select value and of a multi_select option; `?` of a field that has a value.
  { name: "tasks_custom_fields_idx", definition: "on tasks using gin (custom_fields)" },
  { name: "tasks_owner_idx", definition: "on tasks (organization_id, owner_user_id, archived, updated_at desc, number desc)" },
  { name: "tasks_title_trgm_idx", definition: "on tasks using gin (title gin_trgm_ops)" },
  // Erasing a task takes its Idempotency-Key records, found by organization and result id.
  { name: "idempotency_result_idx", definition: "on idempotency (organization_id, (result->>'id'))" },
  // An undo finds the versions a credential, a request or a batch wrote within a time window
  // (decision 0044). Each predicate is implied by an equality on its column, so the planner takes it;
  // versions written before actors were recorded are in none.
  { name: "task_versions_actor_idx", definition: "on task_versions (organization_id, actor_id, created_at) where actor_id is not null" },
  { name: "task_versions_request_idx", definition: "on task_versions (organization_id, request_id) where request_id is not null" },
  { name: "task_versions_batch_idx", definition: "on task_versions (organization_id, batch_key, created_at) where batch_key is not null" },
  // A list as of an instant walks the versions newest first from it (decision 0047).
  { name: "task_versions_as_of_idx", definition: "on task_versions (organization_id, created_at desc, task_number desc)" },
  // Erasing a task reduces the events of its comments, which name it as data.task_id.
  { name: "events_comment_task_idx", definition: "on events (organization_id, (payload->'data'->>'task_id')) where type like 'comment.%'" },
];
