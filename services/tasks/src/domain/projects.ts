import type { Caller, Project } from "@tasksvc/contracts";
import { fieldError } from "@tasksvc/errors";
import { ProjectNameTaken } from "../repo/projects-repo.js";
import { toTask } from "../repo/task-json.js";
import { changesOf } from "./events/changes.js";
import { notFound } from "./refs.js";
import type { TasksResources } from "./resources.js";
import { keyedWrites } from "./writes.js";

function nameTaken(e: unknown): never {
  if (e instanceof ProjectNameTaken) throw fieldError("/name", "a project with this name already exists in the organization");
  throw e;
}

export function projectsSystem(res: TasksResources) {
  const { repos } = res;
  const write = keyedWrites(res);
  return {
    async createProject(c: Caller, b: { name: string; description?: string | undefined }): Promise<Project> {
      return write(c, "createProject", (r) => r.projects.insert(c.organizationId, b.name, b.description ?? null).catch(nameTaken));
    },

    async getProject(c: Caller, id: string): Promise<Project> {
      const p = await repos.projects.get(c.organizationId, id);
      if (!p) throw notFound("project");
      return p;
    },

    listProjects: (c: Caller, limit: number, after: string | undefined) => repos.projects.list(c.organizationId, limit, after),

    async updateProject(c: Caller, id: string, patch: { name?: string | undefined; description?: string | null | undefined }): Promise<Project> {
      return write(c, "updateProject", async (r) => {
        const p = await r.projects.update(c.organizationId, id, patch).catch(nameTaken);
        if (!p) throw notFound("project");
        return p;
      });
    },

    async deleteProject(c: Caller, id: string): Promise<{ id: string; deleted: true }> {
      return write(c, "deleteProject", async (r, w) => {
        const { deleted, tasks } = await r.projects.remove(c.organizationId, id);
        w.touched.push(...tasks.map((t) => Number(t.number)));
        if (!deleted) throw notFound("project");
        // Unlinking is not an edit of the task (no new version), but its project_ids changed.
        // A task in the trash changes too (restored, it shows no deleted project) but tells no one: it is in no read.
        for (const t of tasks.filter((t) => !t.deleted_at)) {
          const after = toTask(t);
          const before = { ...after, version: after.version - 1, project_ids: t.old_project_ids };
          await r.events.emit(c.organizationId, c.userId, "task.updated", after, changesOf(before, after));
        }
        return { id, deleted: true as const };
      });
    },
  };
}
export type ProjectsSystem = ReturnType<typeof projectsSystem>;
