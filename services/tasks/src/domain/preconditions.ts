import { type Caller, taskEtag } from "@tasksvc/contracts";
import { AppError } from "@tasksvc/errors";
import type { TaskRow } from "../repo/task-json.js";

/**
 * If-Match: the write goes on only when the request names the task's current ETag (or `*`).
 * Checked on the locked row, so of two writers that read one version, exactly one passes.
 */
export function checkIfMatch(c: Caller, row: TaskRow): void {
  if (c.ifMatch === undefined) return;
  const etag = taskEtag(row.version);
  if (c.ifMatch.includes("*") || c.ifMatch.includes(etag)) return;
  throw new AppError("precondition_failed", `The task is at version ${row.version}, not the one If-Match names: read it again and retry with ETag ${etag}.`, {
    etag,
  });
}
