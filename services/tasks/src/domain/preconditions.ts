import { type Caller, taskEtag } from "@tasksvc/contracts";
import { AppError } from "@tasksvc/errors";
import type { TaskRow } from "../repo/task-json.js";

/** Then its row is read locked. */
export function isConditional(c: Caller): boolean {
  return c.ifMatch !== undefined || c.ifNoneMatch !== undefined;
}

/** If-None-Match compares weakly (RFC 9110, 13.1.2): W/"3" and "3" name the same version. */
const weak = (tag: string) => (tag.startsWith("W/") ? tag.slice(2) : tag);

/**
 * On the locked row, so that of two writers that read one version exactly one passes. If-None-Match
 * on a write lets a client refuse to overwrite the version it already holds.
 */
export function checkIfMatch(c: Caller, row: TaskRow): void {
  const etag = taskEtag(row.version);
  if (c.ifMatch !== undefined && !(c.ifMatch.includes("*") || c.ifMatch.includes(etag))) {
    throw new AppError("precondition_failed", `The task is at version ${row.version}, not the one If-Match names: read it again and retry with ETag ${etag}.`, {
      etag,
    });
  }
  if (c.ifNoneMatch !== undefined && (c.ifNoneMatch.includes("*") || c.ifNoneMatch.some((t) => weak(t) === etag))) {
    const named = c.ifNoneMatch.includes("*") ? "If-None-Match: * names any version" : `If-None-Match names its current ETag ${etag}`;
    throw new AppError("precondition_failed", `The task is at version ${row.version} and ${named}: nothing was changed.`, { etag });
  }
}
