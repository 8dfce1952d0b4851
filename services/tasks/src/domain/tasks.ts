import {
  type Caller,
  type CreateTaskBody,
  type ListTasksQuery,
  type Page,
  type RawJson,
  type SearchTasksBody,
  type Task,
  type TaskVersion,
  taskNumber,
  type UpdateTaskBody,
} from "@tasksvc/contracts";
import { newId } from "@tasksvc/db";
import { fieldError } from "@tasksvc/errors";
import type { Repositories } from "../repo/repositories.js";
import { type Content, contentOf, inTaskOrder, toIsoOrNull, toTask } from "../repo/task-json.js";
import { asOfReads } from "./as-of.js";
import { createBatcher } from "./creates.js";
import { changesOf } from "./events/changes.js";
import { resolveCustom } from "./custom-filter.js";
import { mergedValues } from "./custom-values.js";
import { checkAssignees } from "./people.js";
import { checkIfMatch } from "./preconditions.js";
import { occurAfterDone } from "./recurrence/occurrences.js";
import { normalizeRecurrence, withRecurrenceRule } from "./recurrence/rrule.js";
import { existingTask, filterTask, noTask, notFound, pathNumber } from "./refs.js";
import type { TasksResources } from "./resources.js";
import { stampOf, type WriteCaller } from "./stamps.js";
import { createdContent } from "./task-content.js";
import { LIST_SCAN, listFilter, SEARCH_SCAN, withMe } from "./task-queries.js";
import { keyedWrites } from "./writes.js";

const sameContent = (a: Content, b: Content) => JSON.stringify(a) === JSON.stringify(b);

async function checkProjects(r: Repositories, org: string, ids: string[], pointer: (i: number) => string): Promise<void> {
  const [missing] = await r.projects.missing(org, ids);
  if (missing !== undefined) throw fieldError(pointer(ids.indexOf(missing)), `project ${missing} does not exist in this organization`);
}

/** Each id a label of the organization now (locked to the commit inside a write), else 400 at the first that is not. */
async function checkLabels(r: Repositories, org: string, ids: readonly string[] | undefined): Promise<void> {
  if (ids === undefined || ids.length === 0) return;
  const found = await r.removals.lockLabels(org, ids);
  const at = ids.findIndex((id) => !found.has(id));
  if (at >= 0) throw fieldError(`/label_ids/${at}`, `label ${ids[at]} does not exist in this organization`);
}

async function parentOf(r: Repositories, org: string, ref: string): Promise<number> {
  const parent = taskNumber(ref);
  if (parent === null || !(await r.tasks.exists(org, parent))) throw fieldError("/parent_task_id", "no such task in this organization");
  return parent;
}

export function tasksSystem(res: TasksResources) {
  const { repos, scans, cache } = res;
  const write = keyedWrites(res);
  const past = asOfReads(res);

  const creates = createBatcher(res, async (r, c, b) => {
    const org = c.organizationId;
    const projectIds = b.project_ids ?? (b.project_id === undefined ? [] : [b.project_id]);
    await checkProjects(r, org, projectIds, (i) => (b.project_id === undefined ? `/project_ids/${i}` : "/project_id"));
    const parent = b.parent_task_id === undefined ? null : await parentOf(r, org, b.parent_task_id);
    await checkAssignees(res.members, c, b.assignee_ids);
    await checkLabels(r, org, b.label_ids);
    const defs = b.custom_fields === undefined ? [] : await r.customFields.definitions(org, Object.keys(b.custom_fields), false);
    const custom = await mergedValues(defs, {}, b.custom_fields, { members: res.members, caller: c });
    const content = createdContent(b, { projectIds, parent, custom }, res.now());
    return { content, fieldsSeen: defs.map((d) => ({ id: d.id, stamp: d.stamp })) };
  });

  return {
    /**
     * A replay answers the record kept as jsonb (keys sorted by length), put back in toTask()'s order
     * so it is byte for byte the answer it repeats; so do updateTask and setArchived.
     */
    createTask: async (c: WriteCaller, b: CreateTaskBody): Promise<Task> => inTaskOrder(await creates.submit(c, withRecurrenceRule(b))),

    async getTask(c: Caller, ref: string, asOf?: string): Promise<Task> {
      if (asOf !== undefined) return past.getTask(c, ref, asOf);
      const org = c.organizationId;
      const n = pathNumber(ref);
      const hit = cache.get(org, n);
      if (hit) {
        // On a cluster a copy is served only if its row is still that version (decision 0017).
        if (!res.checkHits() || (await repos.tasks.rowVersion(org, n)) === hit.version) return hit.task;
        cache.drop(org, n);
      }
      const epoch = cache.epoch();
      const row = await repos.tasks.getForCache(org, n);
      if (!row) throw noTask();
      const task = toTask(row);
      cache.put(org, n, task, row.row_version, epoch);
      return task;
    },

    async listTasks(c: Caller, q: ListTasksQuery): Promise<RawJson<Page<Task>> | Page<Task>> {
      if (q.as_of !== undefined) return past.listTasks(c, { ...q, as_of: q.as_of });
      const org = c.organizationId;
      const parent = await filterTask(repos, org, q.parent_task_id, "parent task");
      const series = await filterTask(repos, org, q.series_task_id, "series task");
      if (q.project_id !== undefined && !(await repos.projects.get(org, q.project_id))) throw notFound("project");
      const { sortType } = await resolveCustom(repos, c, undefined, q.sort, { filter: "", sort: "/sort" });
      return scans.runFor(c, LIST_SCAN, (until) =>
        repos.search.page(org, { filter: withMe(listFilter(q, parent), c.userId), series, sort: q.sort, sortType, limit: q.limit, after: q.after, until }),
      );
    },

    /** Ids that name nothing match nothing: a condition, not a reference to check. */
    async searchTasks(c: Caller, body: SearchTasksBody): Promise<RawJson<Page<Task>>> {
      const { filter, sortType } = await resolveCustom(repos, c, withMe(body.filter, c.userId), body.sort, { filter: "/filter", sort: "/sort" });
      return scans.runFor(c, SEARCH_SCAN, (until) =>
        repos.search.page(c.organizationId, { filter, sort: body.sort, sortType, limit: body.limit, after: body.after, until }),
      );
    },

    async updateTask(c: WriteCaller, ref: string, patch: UpdateTaskBody): Promise<Task> {
      const p = withRecurrenceRule(patch);
      // Asked before the transaction, so no row lock waits on another service.
      await checkAssignees(res.members, c, p.assignee_ids);
      const fieldKeys = p.custom_fields === undefined ? [] : Object.keys(p.custom_fields);
      if (fieldKeys.length > 0)
        await mergedValues(await repos.customFields.definitions(c.organizationId, fieldKeys, false), {}, p.custom_fields, { members: res.members, caller: c });
      const answer = await write(c, "updateTask", async (r, w) => {
        const org = c.organizationId;
        // The parent relation stays acyclic only if no two parent changes of one organization check the
        // tree at once (A→B, B→C and C→A each pass alone). Taken before the row lock, always, so no deadlock.
        if (p.parent_task_id !== undefined && p.parent_task_id !== null) await r.tasks.lockHierarchy(org);
        const row = await existingTask(r, org, ref, true);
        checkIfMatch(c, row);
        const number = Number(row.number);
        const before = contentOf(row);
        const after: Content = {
          title: p.title ?? before.title,
          description: p.description === undefined ? before.description : p.description,
          status: p.status ?? before.status,
          priority: p.priority === undefined ? before.priority : p.priority,
          start_date: p.start_date === undefined ? before.start_date : toIsoOrNull(p.start_date),
          due_date: p.due_date === undefined ? before.due_date : toIsoOrNull(p.due_date),
          notes: p.notes === undefined ? before.notes : p.notes,
          story_points: p.story_points === undefined ? before.story_points : p.story_points,
          recurrence: p.recurrence === undefined ? before.recurrence : p.recurrence === null ? null : normalizeRecurrence(p.recurrence),
          project_ids: p.project_ids ?? before.project_ids,
          assignee_ids: p.assignee_ids ?? before.assignee_ids,
          label_ids: p.label_ids ?? before.label_ids,
          // Checked again under the definitions' locks: a field or option deleted meanwhile is refused.
          custom_fields:
            fieldKeys.length === 0
              ? before.custom_fields
              : await mergedValues(await r.customFields.definitions(org, fieldKeys, true), before.custom_fields, p.custom_fields),
          parent_number: before.parent_number,
        };
        if (p.parent_task_id === null) after.parent_number = null;
        else if (p.parent_task_id !== undefined) {
          const parent = await parentOf(r, org, p.parent_task_id);
          if (await r.tasks.isSelfOrDescendant(org, number, parent)) throw fieldError("/parent_task_id", "would make the task its own ancestor");
          after.parent_number = parent;
        }
        if (p.project_ids !== undefined) await checkProjects(r, org, p.project_ids, (i) => `/project_ids/${i}`);
        await checkLabels(r, org, p.label_ids);
        if (sameContent(before, after)) return toTask(row);
        const projectsChanged = JSON.stringify(before.project_ids) !== JSON.stringify(after.project_ids);
        const updated = await r.tasks.updateContent(org, number, after, newId("ver"), projectsChanged, stampOf(c));
        const task = toTask(updated);
        w.touched.push(number);
        await r.events.emit(org, c.userId, "task.updated", task, changesOf(toTask(row), task));
        // Completing a series' latest occurrence shows its next one at once (decision 0021).
        if (before.status !== "COMPLETED" && after.status === "COMPLETED" && (await occurAfterDone(r, org, updated, res.now()))) w.occurred++;
        return task;
      });
      return inTaskOrder(answer);
    },

    async setArchived(c: Caller, ref: string, archived: boolean): Promise<Task> {
      const answer = await write(c, archived ? "archiveTask" : "unarchiveTask", async (r, w) => {
        const org = c.organizationId;
        const row = await existingTask(r, org, ref, true);
        checkIfMatch(c, row);
        const changed = await r.tasks.setArchived(org, Number(row.number), archived);
        if (!changed) return toTask(row);
        w.touched.push(Number(row.number));
        const task = toTask(changed);
        await r.events.emit(org, c.userId, archived ? "task.archived" : "task.updated", task, changesOf(toTask(row), task));
        // Archiving a series' latest occurrence counts as done; archiving the head ends the series instead.
        if (archived && (await occurAfterDone(r, org, changed, res.now()))) w.occurred++;
        return task;
      });
      return inTaskOrder(answer);
    },

    async history(c: Caller, ref: string, limit: number, after: string | undefined): Promise<Page<TaskVersion>> {
      const n = pathNumber(ref);
      if (!(await repos.tasks.exists(c.organizationId, n))) throw noTask();
      return repos.tasks.history(c.organizationId, n, limit, after);
    },

    lookupTasks: async (c: Caller, numbers: number[]) => ({ tasks: await repos.tasks.summaries(c.organizationId, [...new Set(numbers)]) }),

    async taskWithSubtasks(c: Caller, number: number, only: { owner?: string | undefined; limit?: number | undefined } = {}) {
      const [task] = await repos.tasks.summaries(c.organizationId, [number]);
      if (!task) return { task: null, subtasks: [] };
      return { task, subtasks: await repos.tasks.subtaskSummaries(c.organizationId, number, only) };
    },
  };
}
export type TasksSystem = ReturnType<typeof tasksSystem>;
