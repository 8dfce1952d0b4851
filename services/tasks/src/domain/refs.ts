import { taskNumber } from "@tasksvc/contracts";
import { AppError } from "@tasksvc/errors";
import type { Repositories } from "../repo/repositories.js";
import type { TaskRow } from "../repo/task-json.js";

// References to tasks as requests name them (a path's id, a filter's), shared by the systems.

export const notFound = (what: string) => new AppError("resource_not_found", `No ${what} with that id exists in this organization.`);
export const noTask = () => notFound("task");

/** A path id that cannot name a task names none: 404, like an unknown one. */
export function pathNumber(ref: string): number {
  const n = taskNumber(ref);
  if (n === null) throw noTask();
  return n;
}

/** The task a path names, read with `r` (locked to the transaction's end with `lock`), or 404. */
export async function existingTask(r: Repositories, org: string, ref: string, lock = false): Promise<TaskRow> {
  const row = await r.tasks.get(org, pathNumber(ref), lock);
  if (!row) throw noTask();
  return row;
}

/**
 * A list filter that names a task (`parent_task_id`, `series_task_id`, the feed's `task_id`): its
 * number, or undefined when the filter is not given. An id that names no task of the
 * organization is a 404 naming `what`.
 */
export async function filterTask(r: Repositories, org: string, ref: string | undefined, what: string): Promise<number | undefined> {
  if (ref === undefined) return undefined;
  const n = taskNumber(ref);
  if (n === null || !(await r.tasks.exists(org, n))) throw notFound(what);
  return n;
}
