import type { RemovalJob } from "@tasksvc/contracts";
import { newId } from "@tasksvc/db";
import type { Carried } from "../repo/tasks-repo.js";
import { contentOf, toTask } from "../repo/task-json.js";
import { changesOf } from "./events/changes.js";
import type { TasksResources } from "./resources.js";
import { SERVICE_STAMP } from "./stamps.js";

/** A transaction of this many tasks: each a version and an event, well under a second. */
const BATCH = 100;
/** A task a writer holds is skipped and looked at again after this. */
const HELD_WAIT_MS = 200;

/**
 * Removes a deleted label, custom field or option from every task carrying it, each a new version
 * with a task.updated event. A task is taken only while it still carries it and under its row lock,
 * so a job run twice, or again after a crash, writes no version twice; reads leave it out meanwhile.
 */
export function removalsSystem(res: TasksResources) {
  async function stripBatch(org: string, what: Carried): Promise<number[]> {
    return res.tx(async (r) => {
      const rows = await r.tasks.carrying(org, what, BATCH);
      for (const row of rows) {
        // The row shows its labels and values without those being removed, so its content is already the new one.
        const updated = await r.tasks.updateContent(org, Number(row.number), contentOf(row), newId("ver"), false, SERVICE_STAMP);
        const task = toTask(updated);
        const before = { ...toTask(row), label_ids: row.stored_label_ids, custom_fields: row.stored_custom_fields };
        // The service's own work: nobody acted. A task in the trash is in no read, so its change tells no one.
        if (!row.deleted_at) await r.events.emit(org, null, "task.updated", task, changesOf(before, task));
      }
      return rows.map((row) => Number(row.number));
    });
  }

  /** What the job removes; undefined when its removal is already done. */
  async function carried(job: RemovalJob): Promise<Carried | undefined> {
    const key = await res.repos.removals.fieldKey(job.organization_id, job.kind, job.ref);
    if (key === undefined) return undefined;
    if (job.kind === "label") return { kind: "label", ref: job.ref };
    if (key === null) throw new Error(`the ${job.kind} removal ${job.ref} names no field key`);
    return job.kind === "field" ? { kind: "field", key } : { kind: "option", key, ref: job.ref };
  }

  return {
    async run(job: RemovalJob, working: () => void): Promise<void> {
      const org = job.organization_id;
      const what = await carried(job);
      if (what === undefined) return;
      for (;;) {
        const numbers = await stripBatch(org, what);
        working();
        if (numbers.length > 0) {
          res.written();
          res.cache.invalidate(org, numbers);
          await res.changed(org, numbers);
          continue;
        }
        if (!(await res.repos.tasks.anyCarrying(org, what))) break;
        await new Promise((resolve) => setTimeout(resolve, HELD_WAIT_MS));
      }
      // Nobody can add it again: its definition is gone, and writers lock the definitions they use.
      await res.repos.removals.finish(org, job.kind, job.ref);
    },

    /** A job lost between the deleting commit and its publish (a crash) is queued again. */
    async sweep(): Promise<number> {
      const pending = await res.repos.removals.pending(100);
      for (const p of pending) await res.startRemoval(p);
      return pending.length;
    },
  };
}
export type RemovalsSystem = ReturnType<typeof removalsSystem>;
