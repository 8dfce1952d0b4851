import { taskNumber } from "@tasksvc/contracts";
import { AppError } from "@tasksvc/errors";
import type { Repositories } from "../repo/repositories.js";
import type { TaskRow } from "../repo/task-json.js";

export const notFound = (what: string) => new AppError("resource_not_found", `No ${what} with that id exists in this organization.`);
export const noTask = () => notFound("task");

/** A path id that cannot name a task names none: 404, like an unknown one. */
export function pathNumber(ref: string): number {
  const n = taskNumber(ref);
  if (n === null) throw noTask();
  return n;
}

/** For what hangs off a task and needs only that it exists: its row (notes of up to 100,000 characters) is not read. */
export async function existingTaskNumber(r: Repositories, org: string, ref: string): Promise<number> {
  const number = pathNumber(ref);
  if (!(await r.tasks.exists(org, number))) throw noTask();
  return number;
}

export async function existingTask(r: Repositories, org: string, ref: string, lock = false): Promise<TaskRow> {
  const row = await r.tasks.get(org, pathNumber(ref), lock);
  if (!row) throw noTask();
  return row;
}

export async function filterTask(r: Repositories, org: string, ref: string | undefined, what: string): Promise<number | undefined> {
  if (ref === undefined) return undefined;
  const n = taskNumber(ref);
  if (n === null || !(await r.tasks.exists(org, n))) throw notFound(what);
  return n;
}
