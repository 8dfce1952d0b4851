import type { ListTasksQuery, TaskFilter } from "@tasksvc/contracts";
import { ME, taskId } from "@tasksvc/contracts";

const NONE = "none";

/** GET /v1/tasks and POST /v1/tasks/search then share one compiler and one meaning. */
export function listFilter(q: ListTasksQuery, parent: number | undefined): TaskFilter {
  const all: TaskFilter[] = [{ field: "archived", op: "eq", value: q.archived }];
  if (q.status !== undefined) all.push({ field: "status", op: "in", value: q.status });
  if (q.priority !== undefined) all.push({ field: "priority", op: "in", value: q.priority });
  if (q.project_id !== undefined) all.push({ field: "project_id", op: "eq", value: q.project_id });
  if (q.label_id !== undefined) all.push({ field: "label_ids", op: "in", value: q.label_id });
  if (q.owner_id !== undefined) all.push({ field: "owner_id", op: "eq", value: q.owner_id });
  if (q.assignee_id !== undefined) {
    const ids = q.assignee_id.filter((v) => v !== NONE);
    const any: TaskFilter[] = ids.length > 0 ? [{ field: "assignee_ids", op: "in", value: ids }] : [];
    if (ids.length < q.assignee_id.length) any.push({ field: "assignee_ids", op: "is_null", value: true });
    all.push(any.length === 1 ? (any[0] as TaskFilter) : { or: any });
  }
  if (parent !== undefined) all.push({ field: "parent_task_id", op: "eq", value: taskId(parent) });
  if (q.created_gte !== undefined) all.push({ field: "created_at", op: "gte", value: q.created_gte });
  if (q.created_lt !== undefined) all.push({ field: "created_at", op: "lt", value: q.created_lt });
  if (q.updated_gte !== undefined) all.push({ field: "updated_at", op: "gte", value: q.updated_gte });
  if (q.updated_lt !== undefined) all.push({ field: "updated_at", op: "lt", value: q.updated_lt });
  if (q.due_gte !== undefined) all.push({ field: "due_date", op: "gte", value: q.due_gte });
  if (q.due_lt !== undefined) all.push({ field: "due_date", op: "lt", value: q.due_lt });
  if (q.is_blocked !== undefined) all.push({ field: "is_blocked", op: "eq", value: q.is_blocked });
  if (q.q !== undefined) all.push({ field: "text", op: "matches", value: q.q });
  return { and: all };
}

const PEOPLE_FIELDS: ReadonlySet<string> = new Set(["owner_id", "assignee_ids"]);

/** `me` becomes the caller's user id wherever a user is matched, before the filter reaches SQL. */
export function withMe(f: TaskFilter, userId: string): TaskFilter {
  if ("and" in f) return { and: f.and.map((c) => withMe(c, userId)) };
  if ("or" in f) return { or: f.or.map((c) => withMe(c, userId)) };
  if ("not" in f) return { not: withMe(f.not, userId) };
  if (!PEOPLE_FIELDS.has(f.field)) return f;
  const me = (v: string | number) => (v === ME ? userId : v);
  return { ...f, value: Array.isArray(f.value) ? f.value.map(me) : typeof f.value === "string" ? me(f.value) : f.value } as TaskFilter;
}

export const LIST_SCAN = {
  operation: "list",
  narrow: "narrow it with more selective filters (status, project_id, a date bound, fewer full-text words) or a smaller limit",
} as const;
export const SEARCH_SCAN = {
  operation: "search",
  narrow: "narrow the filter (fewer or more selective full-text conditions, fewer negations, a status, project or date condition) or use a smaller limit",
} as const;
