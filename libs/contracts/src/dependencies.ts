import { z } from "zod";
import { OpaqueId } from "./common.js";
import { TaskIdParam, TaskRef, TaskStatus } from "./tasks.js";

// Dependencies (spec 2.3, 4.1): what blocks a task; the graph is always acyclic.

const TASK_ID = { description: "A task's id (T-<n>).", examples: ["T-1"] };

export const DependencyItem = z.object({
  task_id: z.string().meta(TASK_ID),
  title: z.string().meta({ description: "A short single-line title.", examples: ["Write the announcement"] }),
  status: TaskStatus.meta({ description: "The linked task's status.", examples: ["TODO"] }),
  open: z.boolean().meta({ description: "Whether the linked task is not completed yet (an open blocker blocks).", examples: [true] }),
});
/** Spec 2.3. */
export const DependencyView = z.object({
  task_id: z.string().meta(TASK_ID),
  is_blocked: z.boolean().meta({ description: "Whether any blocker of this task is still open.", examples: [true] }),
  blocked_by_count: z
    .number()
    .int()
    .meta({ description: "How many open tasks block this one.", examples: [1] }),
  blocking_count: z
    .number()
    .int()
    .meta({ description: "How many tasks this one blocks.", examples: [0] }),
  blocked_by: z.array(DependencyItem).meta({ description: "The tasks that block this one.", examples: [[]] }),
  blocking: z.array(DependencyItem).meta({ description: "The tasks this one blocks.", examples: [[]] }),
});
export type DependencyView = z.infer<typeof DependencyView>;

export const DependencyParams = z.object({
  task_id: TaskIdParam,
  blocker_task_id: OpaqueId.meta({ description: "The blocking task's id (T-<n>).", examples: ["T-2"] }),
});

export const AddDependencyBody = z.strictObject({ blocker_task_id: TaskRef.meta({ description: "The task that blocks this one.", examples: ["T-2"] }) });
