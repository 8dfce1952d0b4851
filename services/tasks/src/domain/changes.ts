import type { Task, TaskChanges } from "@tasksvc/contracts";

/**
 * What a change did to a task, for its event's `changes`: each field whose value differs between
 * the task before and after, as the API shows both (so `from` is what a consumer last received in
 * `data`). Fields compare by their JSON, so arrays and objects (project_ids, recurrence) compare
 * by value. Every field counts, version and updated_at included: they are part of what changed.
 */
export function changesOf(before: Task, after: Task): TaskChanges {
  const from: Record<string, unknown> = before;
  const to: Record<string, unknown> = after;
  const out: TaskChanges = {};
  for (const key of Object.keys(to)) {
    if (JSON.stringify(from[key]) !== JSON.stringify(to[key])) out[key] = { from: from[key] ?? null, to: to[key] };
  }
  return out;
}
