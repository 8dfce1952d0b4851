import { type Caller, type DependencyView, taskNumber } from "@tasksvc/contracts";
import { AppError, fieldError } from "@tasksvc/errors";
import { toTask } from "../repo/task-json.js";
import { checkIfMatch, isConditional } from "./preconditions.js";
import { existingTask, notFound } from "./refs.js";
import type { TasksResources } from "./resources.js";
import { keyedWrites } from "./writes.js";

export function dependenciesSystem(res: TasksResources) {
  const { repos } = res;
  const write = keyedWrites(res);
  return {
    async dependencies(c: Caller, ref: string): Promise<DependencyView> {
      const row = await existingTask(repos, c.organizationId, ref);
      return repos.dependencies.view(c.organizationId, Number(row.number));
    },

    async addDependency(c: Caller, ref: string, blockerRef: string): Promise<{ created: boolean; view: DependencyView }> {
      return write(c, "addDependency", async (r) => {
        const org = c.organizationId;
        // One writer per organization's graph at a time: two links that together would close a loop cannot both pass the check.
        await r.dependencies.lock(org);
        const row = await existingTask(r, org, ref, isConditional(c));
        checkIfMatch(c, row);
        const blocked = Number(row.number);
        const blocker = taskNumber(blockerRef);
        if (blocker === blocked) throw fieldError("/blocker_task_id", "a task cannot block itself");
        if (blocker === null || !(await r.tasks.exists(org, blocker))) throw notFound("blocker task");
        if (await r.dependencies.isBlockedBy(org, blocker, blocked)) {
          throw new AppError(
            "dependency_cycle",
            `${row.number === String(blocked) ? `T-${blocked}` : ref} already blocks T-${blocker} (directly or through other tasks); this link would close a loop.`,
          );
        }
        const created = await r.dependencies.insert(org, blocked, blocker);
        // Nothing the task shows changed: its dependency view did.
        if (created) await r.events.emit(org, c.userId, "task.updated", toTask(row), {});
        return { created, view: await r.dependencies.view(org, blocked) };
      });
    },

    async removeDependency(c: Caller, ref: string, blockerRef: string): Promise<DependencyView> {
      return write(c, "removeDependency", async (r) => {
        const org = c.organizationId;
        const row = await existingTask(r, org, ref, isConditional(c));
        checkIfMatch(c, row);
        const blocked = Number(row.number);
        const blocker = taskNumber(blockerRef);
        if (blocker === null || !(await r.dependencies.remove(org, blocked, blocker))) throw notFound("dependency");
        await r.events.emit(org, c.userId, "task.updated", toTask(row), {});
        return r.dependencies.view(org, blocked);
      });
    },
  };
}
export type DependenciesSystem = ReturnType<typeof dependenciesSystem>;
