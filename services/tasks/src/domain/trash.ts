import { type Caller, type DeletedTask, inTaskOrder, type Page, type PurgedTask, type Task, type TrashItem, taskId } from "@tasksvc/contracts";
import { newId } from "@tasksvc/db";
import { AppError } from "@tasksvc/errors";
import { iso, toTask } from "../repo/task-json.js";
import { checkIfMatch } from "./preconditions.js";
import type { PurgeSystem } from "./purge.js";
import { existingTask, noTask, pathNumber } from "./refs.js";
import type { TasksResources } from "./resources.js";
import { stampOf } from "./stamps.js";
import { keyedWrites } from "./writes.js";

export interface TrashOptions {
  /** TRASH_RETENTION: how long a deleted task stays restorable. */
  retentionMs: number;
  purge: Pick<PurgeSystem, "purgeTree">;
}

const TRASH_SCAN = { operation: "trash", narrow: "use a smaller limit" } as const;

/** Left of the caller's deadline for the answer once an erasure ran inline; the purge scheduler finishes what did not fit. */
const ANSWER_MARGIN_MS = 1_000;

/**
 * The trash. A deleted task keeps its rows, marked, and every read leaves it out;
 * its subtasks go with it, each with its own task.deleted, and come back with it (each a new
 * version and a task.restored). Writes that change the tree take the organization's hierarchy
 * lock, so a subtask is never made or moved under a task going to the trash.
 */
export function trashSystem(res: TasksResources, o: TrashOptions) {
  const { repos, roles } = res;
  const write = keyedWrites(res);

  return {
    async deleteTask(c: Caller, ref: string): Promise<DeletedTask> {
      return write(c, "deleteTask", async (r, w) => {
        const org = c.organizationId;
        await r.tasks.lockHierarchy(org);
        const row = await existingTask(r, org, ref, true);
        checkIfMatch(c, row);
        const trashed = await r.trash.trashSubtree(org, Number(row.number), c.userId, o.retentionMs);
        const root = trashed[0];
        if (root === undefined) throw noTask();
        await r.events.emitEach(trashed.map((t) => ({ organization_id: org, type: "task.deleted" as const, task: toTask(t), actor: c.userId })));
        w.touched.push(...trashed.map((t) => Number(t.number)));
        return { id: taskId(root.number), deleted_at: iso(root.deleted_at), purge_at: iso(root.purge_at), deleted_by: root.deleted_by };
      });
    },

    /**
     * The task and the subtasks that went to the trash with it; one deleted on its own before stays.
     * A task whose parent is still in the trash stays too (409): restored alone it would hang under
     * a task no read shows.
     */
    async restoreTask(c: Caller, ref: string): Promise<Task> {
      const answer = await write(c, "restoreTask", async (r, w) => {
        const org = c.organizationId;
        await r.tasks.lockHierarchy(org);
        const row = await r.trash.trashed(org, pathNumber(ref));
        if (!row) throw noTask();
        if (row.parent_number !== null && (await r.trash.inTrash(org, Number(row.parent_number)))) {
          throw new AppError(
            "parent_in_trash",
            `Its parent T-${row.parent_number} is in the trash: restore T-${row.trash_root} instead, which brings back the subtasks deleted with it.`,
          );
        }
        const numbers = await r.trash.group(org, Number(row.number), Number(row.trash_root));
        const restored = await r.trash.restore(
          org,
          numbers,
          numbers.map(() => newId("ver")),
          stampOf(c),
        );
        const tasks = restored.map(toTask);
        await r.events.emitEach(tasks.map((task) => ({ organization_id: org, type: "task.restored" as const, task, actor: c.userId })));
        w.touched.push(...numbers.map(Number));
        const first = tasks[0];
        if (first === undefined) throw noTask();
        return first;
      });
      return inTaskOrder(answer);
    },

    /** A walk of the organization's trash, so it takes its share of the scan connections like every list. */
    listTrash: (c: Caller, limit: number, after: string | undefined): Promise<Page<TrashItem>> =>
      res.scans.runFor(c, TRASH_SCAN, () => repos.trash.list(c.organizationId, limit, after)),

    /** At once, by an owner or admin: the task and every task below it, all in the trash. */
    async purgeTask(c: Caller, ref: string): Promise<PurgedTask> {
      const org = c.organizationId;
      const number = pathNumber(ref);
      if (!(await repos.trash.trashed(org, number))) throw noTask();
      const role = await roles.roleOf(c.ctx, org, c.userId);
      if (role !== "owner" && role !== "admin") {
        throw new AppError("insufficient_scope", "Only an owner or admin of the organization may erase a task from the trash before its time.");
      }
      const begun = await res.tx(async (r) => ((await r.trash.trashed(org, number)) ? r.trash.purgeNow(org, number) : []));
      if (begun.length === 0) throw noTask();
      res.cache.invalidate(org, begun);
      const until = c.deadline === undefined ? undefined : c.deadline - ANSWER_MARGIN_MS;
      await o.purge.purgeTree(org, number, { actorId: c.userId, actor: c.actor, ctx: c.ctx }, until);
      return { id: taskId(number) };
    },
  };
}
export type TrashSystem = ReturnType<typeof trashSystem>;
