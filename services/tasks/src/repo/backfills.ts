import type { Backfill } from "@tasksvc/db";

/**
 * The columns the service's statements read as never null, filled for the rows from before them
 * (libs/db migrate) before the service serves. A task's version, when it had none, was its count
 * of content versions (archiving did not count then); a version row's, its place in that count.
 */
export const TASK_BACKFILLS: readonly Backfill[] = [
  { table: "tasks", column: "version", value: "version_count" },
  { table: "task_versions", column: "version", value: "seq" },
];
