import type { Backfill } from "@tasksvc/db";

/**
 * Filled before the service serves, so its statements may read them as never null. A task's version
 * was then its count of content versions (archiving did not count yet).
 */
export const TASK_BACKFILLS: readonly Backfill[] = [
  { table: "tasks", column: "version", value: "version_count" },
  { table: "task_versions", column: "version", value: "seq" },
];
