import { z } from "zod";
import { EXAMPLE_INSTANT, PageQuery, page, Timestamp } from "./common.js";
import { Task, TaskParams } from "./tasks.js";

// The trash: a deleted task (and its subtasks) stays restorable until its purge time, then is erased.

const USER_ID = "usr_7hQ2mD9xK3pL5nB8vR4tW1";
const PURGE_INSTANT = "2026-12-23T09:30:00.000Z";
const TASK_ID = { description: "The task's id (T-<n>).", examples: ["T-42"] };
const DELETED_AT = { description: "When it went to the trash (UTC, ISO 8601).", examples: [EXAMPLE_INSTANT] };
const PURGE_AT = {
  description:
    "When it is erased for good unless restored before (UTC, ISO 8601): its deletion plus the trash retention (30 days by default); within a minute of it.",
  examples: [PURGE_INSTANT],
};
const DELETED_BY = { description: "The user whose credential deleted it (or deleted the parent it went to the trash with).", examples: [USER_ID] };

export const DeletedTask = z.object({
  id: z.string().meta(TASK_ID),
  deleted_at: Timestamp.meta(DELETED_AT),
  purge_at: Timestamp.meta(PURGE_AT),
  deleted_by: z.string().meta(DELETED_BY),
});
export type DeletedTask = z.infer<typeof DeletedTask>;

export const TrashItem = z.object({
  id: z.string().meta(TASK_ID),
  title: z.string().meta({ description: "The task's title.", examples: ["Write the announcement"] }),
  deleted_at: Timestamp.meta(DELETED_AT),
  purge_at: Timestamp.meta(PURGE_AT),
  deleted_by: z.string().meta(DELETED_BY),
});
export type TrashItem = z.infer<typeof TrashItem>;

export const PurgedTask = z.object({ id: z.string().meta({ description: "The erased task's id.", examples: ["T-42"] }) });
export type PurgedTask = z.infer<typeof PurgedTask>;

export const TrashQuery = PageQuery.strict();

export const trashOps = {
  deleteTask: { input: TaskParams, output: DeletedTask },
  restoreTask: { input: TaskParams, output: Task },
  listTrash: { input: PageQuery, output: page(TrashItem) },
  purgeTask: { input: TaskParams, output: PurgedTask },
} as const;
