import {
  type RawJson,
  taskId,
  taskNumber,
  type Caller,
  type CreateTaskBody,
  type DependencyView,
  type Event,
  type ListTasksQuery,
  type SearchTasksBody,
  type Page,
  type Project,
  type Task,
  type TaskVersion,
  type UpdateTaskBody,
} from "@tasksvc/contracts";
import { idempotentWrite, newId } from "@tasksvc/db";
import { AppError, fieldError } from "@tasksvc/errors";
import { recurrenceOccurrences } from "@tasksvc/telemetry";
import { ProjectNameTaken } from "../repo/projects-repo.js";
import type { Repositories } from "../repo/repositories.js";
import { type Content, contentOf, inTaskOrder, toIsoOrNull, toTask } from "../repo/task-json.js";
import { createBatcher } from "./creates.js";
import { occurAfterDone } from "./occurrences.js";
import { changesOf } from "./changes.js";
import { checkIfMatch, isConditional } from "./preconditions.js";
import { FEED_SCAN, LIST_SCAN, listFilter, SEARCH_SCAN } from "./task-queries.js";
import { firstSlot, localDay } from "./recurrence.js";
import { normalizeRecurrence, withRecurrenceRule } from "./rrule.js";
import type { TasksResources } from "./resources.js";
import type { TaskCache } from "./task-cache.js";

export interface TasksServiceOptions {
  resources: TasksResources;
  /** Current tasks kept in memory; dropped on every replica by changed(). */
  cache: TaskCache;
  /**
   * Whether a cache hit must be checked against its row's current version before it is served
   * (decision 0017): when changed() may reach another replica after a later request does, or
   * never (a NATS cluster). Asked on every hit.
   */
  checkHits(): boolean;
  /** Tells every replica that these tasks changed; resolves once NATS has the message. */
  changed(organizationId: string, numbers: readonly number[]): Promise<void>;
  /**
   * The time of a write, for the recurrence rules that depend on the day (a head's first slot,
   * the next occurrence made when one is done). The clock unless a test pins it.
   */
  now?: () => Date;
}

const notFound = (what: string) => new AppError("resource_not_found", `No ${what} with that id exists in this organization.`);
const noTask = () => notFound("task");

/** A project name is unique within its organization: the repo's ProjectNameTaken as the API says it. */
function nameTaken(e: unknown): never {
  if (e instanceof ProjectNameTaken) throw fieldError("/name", "a project with this name already exists in the organization");
  throw e;
}

/** A path id that cannot name a task names none: 404, like an unknown one. */
function pathNumber(ref: string): number {
  const n = taskNumber(ref);
  if (n === null) throw noTask();
  return n;
}

const sameContent = (a: Content, b: Content) => JSON.stringify(a) === JSON.stringify(b);

export function tasksService(deps: TasksServiceOptions) {
  const { repos, tx, written, scans } = deps.resources;
  const now = deps.now ?? (() => new Date());

  /**
   * A list filter that names a task (`parent_task_id`, `series_task_id`, the feed's `task_id`): its
   * number, or undefined when the filter is not given. An id that names no task of the
   * organization is a 404 naming `what`.
   */
  async function filterTask(org: string, ref: string | undefined, what: string): Promise<number | undefined> {
    if (ref === undefined) return undefined;
    const n = taskNumber(ref);
    if (n === null || !(await repos.tasks.exists(org, n))) throw notFound(what);
    return n;
  }
  const creates = createBatcher(deps.resources, async (r, c, b) => {
    const org = c.organizationId;
    const projectIds = b.project_ids ?? (b.project_id === undefined ? [] : [b.project_id]);
    await checkProjects(r, org, projectIds, (i) => (b.project_id === undefined ? `/project_ids/${i}` : "/project_id"));
    let parent: number | null = null;
    if (b.parent_task_id !== undefined) {
      parent = taskNumber(b.parent_task_id);
      if (parent === null || !(await r.tasks.exists(org, parent))) throw fieldError("/parent_task_id", "no such task in this organization");
    }
    const recurrence = b.recurrence ? normalizeRecurrence(b.recurrence) : null;
    // A recurring task heads its series as its first occurrence: without a due date of its own it
    // is due on its slot, as every later occurrence is on its own (the day in the series' zone, at
    // 00:00 UTC as a day given for a due date means).
    const firstDay = recurrence === null ? null : firstSlot(recurrence, localDay(now(), recurrence.timezone));
    return {
      title: b.title,
      description: b.description ?? null,
      status: b.status ?? "TODO",
      priority: b.priority ?? null,
      start_date: toIsoOrNull(b.start_date ?? null),
      due_date: toIsoOrNull(b.due_date ?? firstDay),
      notes: b.notes ?? null,
      story_points: b.story_points ?? null,
      recurrence,
      project_ids: projectIds,
      parent_number: parent,
    };
  });

  /**
   * Runs a write once per idempotency key (libs/db idempotentWrite). `touched` collects the
   * tasks the write changed, for the caches of every replica; `w.occurred` counts the recurring
   * tasks' occurrences it made (for the scheduler's metric, once committed).
   */
  async function write<T>(c: Caller, operation: string, fn: (r: Repositories, touched: number[], w: { occurred: number }) => Promise<T>): Promise<T> {
    const touched: number[] = [];
    const w = { occurred: 0 };
    return idempotentWrite({
      records: repos.idempotency,
      tx,
      credentialId: c.credentialId,
      key: c.idempotencyKey,
      operation,
      work: (r) => {
        touched.length = 0; // a deadlock runs the work again
        w.occurred = 0;
        return fn(r, touched, w);
      },
      async afterCommit() {
        written();
        recurrenceOccurrences.inc(w.occurred);
        if (touched.length) {
          // Before the reply: no replica may answer a later read from a copy older than this write
          // (on a cluster, where the broadcast may come late or not at all, getTask checks the
          // copy's row version: decision 0017).
          deps.cache.invalidate(c.organizationId, touched);
          await deps.changed(c.organizationId, touched);
        }
      },
    });
  }

  async function checkProjects(r: Repositories, org: string, ids: string[], pointer: (i: number) => string): Promise<void> {
    const [missing] = await r.projects.missing(org, ids);
    if (missing !== undefined) throw fieldError(pointer(ids.indexOf(missing)), `project ${missing} does not exist in this organization`);
  }

  async function existingTask(r: Repositories, org: string, ref: string, lock = false) {
    const row = await r.tasks.get(org, pathNumber(ref), lock);
    if (!row) throw noTask();
    return row;
  }

  return {
    /**
     * Creates a task; concurrent creates of one organization share a transaction (creates.ts). A
     * replay answers the task its Idempotency-Key record kept as jsonb (keys sorted by length):
     * put back in toTask()'s order, so that it is byte for byte the answer it repeats. So are the
     * answers of updateTask and setArchived.
     */
    createTask: async (c: Caller, b: CreateTaskBody): Promise<Task> => inTaskOrder(await creates.submit(c, withRecurrenceRule(b))),

    async getTask(c: Caller, ref: string): Promise<Task> {
      const org = c.organizationId;
      const n = pathNumber(ref);
      const hit = deps.cache.get(org, n);
      if (hit) {
        // On a cluster a copy is served only if its row is still that version (decision 0017):
        // one primary-key lookup of one value, however the write's broadcast fared.
        if (!deps.checkHits() || (await repos.tasks.rowVersion(org, n)) === hit.version) return hit.task;
        deps.cache.drop(org, n);
      }
      const epoch = deps.cache.epoch();
      const row = await repos.tasks.getForCache(org, n);
      if (!row) throw noTask();
      const task = toTask(row);
      deps.cache.put(org, n, task, row.row_version, epoch);
      return task;
    },

    async listTasks(c: Caller, q: ListTasksQuery): Promise<RawJson<Page<Task>>> {
      const org = c.organizationId;
      const parent = await filterTask(org, q.parent_task_id, "parent task");
      const series = await filterTask(org, q.series_task_id, "series task");
      if (q.project_id !== undefined && !(await repos.projects.get(org, q.project_id))) throw notFound("project");
      return scans.run(org, c.deadline, LIST_SCAN, (until) =>
        repos.search.page(org, { filter: listFilter(q, parent), series, sort: q.sort, limit: q.limit, after: q.after, until }),
      );
    },

    /** A filter tree: ids that name nothing match nothing (a condition, not a reference to check). */
    async searchTasks(c: Caller, body: SearchTasksBody): Promise<RawJson<Page<Task>>> {
      return scans.run(c.organizationId, c.deadline, SEARCH_SCAN, (until) =>
        repos.search.page(c.organizationId, { filter: body.filter, sort: body.sort, limit: body.limit, after: body.after, until }),
      );
    },

    /** The events feed (issue 16): the organization's task events of the last 30 days, newest first. */
    async listEvents(
      c: Caller,
      q: {
        limit: number;
        after?: string | undefined;
        type?: Event["type"] | undefined;
        task_id?: string | undefined;
        created_gte?: string | undefined;
        created_lt?: string | undefined;
        /** The types the caller may see; all when absent. */
        visible?: readonly Event["type"][] | undefined;
      },
    ): Promise<Page<Event>> {
      // An id that names no task is a 404, as for the task list's filters. A task whose events
      // are all past the 30 days answers an empty page.
      const n = await filterTask(c.organizationId, q.task_id, "task");
      // Matched as events carry it (`T-<n>`), whatever spelling the query used.
      return scans.run(c.organizationId, c.deadline, FEED_SCAN, (until) =>
        repos.events.list(c.organizationId, { ...q, task_id: n === undefined ? undefined : taskId(n) }, until),
      );
    },

    /** An event of a type the caller may not see is as absent as one that does not exist. */
    async getEvent(c: Caller, id: string, visible?: readonly Event["type"][]): Promise<Event> {
      const e = await repos.events.get(c.organizationId, id);
      if (!e || (visible !== undefined && !visible.includes(e.type))) throw notFound("event");
      return e;
    },

    async updateTask(c: Caller, ref: string, patch: UpdateTaskBody): Promise<Task> {
      const p = withRecurrenceRule(patch);
      const answer = await write(c, "updateTask", async (r, touched, w) => {
        const org = c.organizationId;
        // Like dependencies, the parent relation stays acyclic only if no two parent changes of
        // one organization check the tree at once: A→B, B→C and C→A each pass alone. Taken
        // before the row lock, always in this order, so it adds no deadlock.
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
          parent_number: before.parent_number,
        };
        if (p.parent_task_id !== undefined) {
          if (p.parent_task_id === null) after.parent_number = null;
          else {
            const parent = taskNumber(p.parent_task_id);
            if (parent === null || !(await r.tasks.exists(org, parent))) throw fieldError("/parent_task_id", "no such task in this organization");
            if (await r.tasks.isSelfOrDescendant(org, number, parent)) throw fieldError("/parent_task_id", "would make the task its own ancestor");
            after.parent_number = parent;
          }
        }
        if (p.project_ids !== undefined) await checkProjects(r, org, p.project_ids, (i) => `/project_ids/${i}`);
        if (sameContent(before, after)) return toTask(row);
        const projectsChanged = JSON.stringify(before.project_ids) !== JSON.stringify(after.project_ids);
        const updated = await r.tasks.updateContent(org, number, after, newId("ver"), projectsChanged);
        const task = toTask(updated);
        touched.push(number);
        await r.events.emit(org, "task.updated", task, changesOf(toTask(row), task));
        // Completing a series' latest occurrence shows its next one at once (decision 0021).
        if (before.status !== "COMPLETED" && after.status === "COMPLETED" && (await occurAfterDone(r, org, updated, now()))) w.occurred++;
        return task;
      });
      return inTaskOrder(answer);
    },

    async setArchived(c: Caller, ref: string, archived: boolean): Promise<Task> {
      const answer = await write(c, archived ? "archiveTask" : "unarchiveTask", async (r, touched, w) => {
        const org = c.organizationId;
        const row = await existingTask(r, org, ref, true);
        checkIfMatch(c, row);
        const changed = await r.tasks.setArchived(org, Number(row.number), archived);
        if (!changed) return toTask(row);
        touched.push(Number(row.number));
        const task = toTask(changed);
        await r.events.emit(org, archived ? "task.archived" : "task.updated", task, changesOf(toTask(row), task));
        // Archiving (dismissing) a series' latest occurrence counts as done: its next one shows at
        // once, as for a completion (decision 0021). Archiving the head ends the series instead.
        if (archived && (await occurAfterDone(r, org, changed, now()))) w.occurred++;
        return task;
      });
      return inTaskOrder(answer);
    },

    async history(c: Caller, ref: string, limit: number, after: string | undefined): Promise<Page<TaskVersion>> {
      const n = pathNumber(ref);
      if (!(await repos.tasks.exists(c.organizationId, n))) throw noTask();
      return repos.tasks.history(c.organizationId, n, limit, after);
    },

    async dependencies(c: Caller, ref: string): Promise<DependencyView> {
      const row = await existingTask(repos, c.organizationId, ref);
      return repos.dependencies.view(c.organizationId, Number(row.number));
    },

    async addDependency(c: Caller, ref: string, blockerRef: string): Promise<{ created: boolean; view: DependencyView }> {
      return write(c, "addDependency", async (r) => {
        const org = c.organizationId;
        // One writer per organization's graph at a time: two links that together would close a
        // loop cannot both pass the check.
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
        if (created) await r.events.emit(org, "task.updated", toTask(row), {});
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
        await r.events.emit(org, "task.updated", toTask(row), {});
        return r.dependencies.view(org, blocked);
      });
    },

    /** For other services: summaries of many tasks in one round trip. */
    lookupTasks: async (c: Caller, numbers: number[]) => ({ tasks: await repos.tasks.summaries(c.organizationId, [...new Set(numbers)]) }),

    async taskWithSubtasks(c: Caller, number: number) {
      const [task] = await repos.tasks.summaries(c.organizationId, [number]);
      if (!task) return { task: null, subtasks: [] };
      return { task, subtasks: await repos.tasks.subtaskSummaries(c.organizationId, number) };
    },

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
      return write(c, "deleteProject", async (r, touched) => {
        const { deleted, tasks } = await r.projects.remove(c.organizationId, id);
        touched.push(...tasks.map((t) => Number(t.number)));
        if (!deleted) throw notFound("project");
        // Unlinking is not an edit of the task (no new version), but its project_ids changed.
        for (const t of tasks) {
          const after = toTask(t);
          const before = { ...after, version: after.version - 1, project_ids: t.old_project_ids };
          await r.events.emit(c.organizationId, "task.updated", after, changesOf(before, after));
        }
        return { id, deleted: true as const };
      });
    },
  };
}
export type TasksService = ReturnType<typeof tasksService>;
