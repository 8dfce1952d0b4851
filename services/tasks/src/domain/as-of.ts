import type { Caller, ListTasksQuery, Page, Task } from "@tasksvc/contracts";
import { fieldError } from "@tasksvc/errors";
import { noTask, notFound, pathNumber } from "./refs.js";
import type { TasksResources } from "./resources.js";
import { LIST_SCAN } from "./task-queries.js";

/** The list parameters an as-of read answers; every other one is refused by name (the versions record none of them). */
const WITH_AS_OF: ReadonlySet<string> = new Set(["as_of", "status", "project_id", "archived", "sort", "limit", "after"]);
const AS_OF_SORTS: ReadonlySet<string> = new Set(["-updated_at", "updated_at"]);

/** Reads of tasks as they stood at an instant (decision 0047). */
export function asOfReads(res: TasksResources) {
  const { repos, scans } = res;
  return {
    async getTask(c: Caller, ref: string, asOf: string): Promise<Task> {
      const task = await repos.asOf.get(c.organizationId, pathNumber(ref), asOf);
      if (task === undefined) throw noTask();
      return task;
    },

    async listTasks(c: Caller, q: ListTasksQuery & { as_of: string }): Promise<Page<Task>> {
      for (const [k, v] of Object.entries(q)) {
        if (v !== undefined && !WITH_AS_OF.has(k))
          throw fieldError(`/${k}`, "cannot be combined with as_of: only status, project_id, archived and sort (updated_at) can");
      }
      if (!AS_OF_SORTS.has(q.sort)) throw fieldError("/sort", "with as_of, the order is by updated_at only: -updated_at (the default) or updated_at");
      const org = c.organizationId;
      if (q.project_id !== undefined && !(await repos.projects.get(org, q.project_id))) throw notFound("project");
      return scans.runFor(c, LIST_SCAN, (until) =>
        repos.asOf.list(org, {
          asOf: q.as_of,
          archived: q.archived,
          status: q.status,
          projectId: q.project_id,
          desc: q.sort === "-updated_at",
          limit: q.limit,
          after: q.after,
          until,
        }),
      );
    },
  };
}
