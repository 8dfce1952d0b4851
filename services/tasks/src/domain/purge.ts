import type { BlobStore } from "@tasksvc/blobs";
import { type Actor, type RpcContext, SYSTEM_ACTOR, taskId } from "@tasksvc/contracts";
import type { Repositories } from "../repo/repositories.js";
import type { TasksResources } from "./resources.js";

export interface PurgeOptions {
  store: Pick<BlobStore, "delete">;
  /** Rows per statement: each stays far under the statement timeout. */
  chunk?: number;
  /** Tasks looked at per tick and replica; the rest waits for the next tick. */
  perTick?: number;
}

const CHUNK = 500;
const PER_TICK = 200;

type Outcome = "purged" | "held" | "gone";

/** Who erases: the event's actor id (null for the scheduler), and the audit log's actor and request. */
export interface PurgedBy {
  actorId: string | null;
  actor: Actor;
  ctx?: RpcContext | undefined;
}

const SCHEDULER: PurgedBy = { actorId: null, actor: SYSTEM_ACTOR };

/**
 * Erasure of tasks from the trash. A task's rows go in chunks, each its own transaction that first
 * takes the task's row (`for update skip locked`): a replica finding it held moves on, so replicas
 * share the work and never wait on each other. Every effect that must happen once rides on a row
 * its statement deleted: the storage given back with the attachments' rows, task.purged with the
 * task's own row. A crash mid-way leaves a task still in the trash and due, taken up again.
 */
export function purgeSystem(res: TasksResources, o: PurgeOptions) {
  const chunk = o.chunk ?? CHUNK;
  const perTick = o.perTick ?? PER_TICK;

  /** One chunk under the task's row lock; null when the task is held elsewhere or no longer due. */
  async function step<T>(org: string, n: number, fn: (r: Repositories) => Promise<T>): Promise<T | null> {
    return res.tx(async (r) => ((await r.purge.claim(org, n)) ? fn(r) : null));
  }

  async function drain(org: string, n: number, fn: (r: Repositories) => Promise<number>): Promise<Outcome | null> {
    for (;;) {
      const done = await step(org, n, fn);
      if (done === null) return "held";
      if (done < chunk) return null;
    }
  }

  /** Deleted after the commit that forgot them; one left behind is taken by the attachments sweep (no row names it). */
  async function deleteFiles(keys: readonly string[]): Promise<void> {
    for (const key of keys) {
      try {
        await o.store.delete(key);
      } catch (err) {
        res.log.warn({ err, file_key: key }, "a purged attachment's file was not deleted; the attachment sweep will");
      }
    }
  }

  async function purgeOne(org: string, n: number, by: PurgedBy): Promise<Outcome> {
    for (;;) {
      const files = await step(org, n, (r) => r.purge.attachments(org, n, chunk));
      if (files === null) return "held";
      await deleteFiles(files.fileKeys);
      if (files.rows < chunk) break;
    }
    for (const part of [
      (r: Repositories) => r.purge.versions(org, n, chunk),
      (r: Repositories) => r.purge.comments(org, n, chunk),
      (r: Repositories) => r.purge.reduceEvents(org, n, chunk),
    ]) {
      const held = await drain(org, n, part);
      if (held !== null) return held;
    }
    const purged = await step(org, n, async (r) => {
      if (!(await r.purge.finish(org, n))) return false;
      await r.events.emitEach([{ organization_id: org, type: "task.purged", task: { id: taskId(n) }, actor: by.actorId }]);
      await r.audit.write({ organizationId: org, action: "task.purged", actor: by.actor, ctx: by.ctx, target: { type: "task", id: taskId(n) } });
      return true;
    });
    if (purged === null) return "held";
    if (!purged) return "gone";
    res.written();
    res.cache.invalidate(org, [n]);
    await res.changed(org, [n]);
    return "purged";
  }

  /** Below first: a parent's row can go only once no subtask names it. */
  async function purgeTree(org: string, root: number, by: PurgedBy, until?: number): Promise<number> {
    let purged = 0;
    for (const n of await res.repos.purge.subtreeDeepestFirst(org, root)) {
      if (until !== undefined && Date.now() > until) break;
      const outcome = await purgeOne(org, n, by);
      if (outcome === "held") break;
      if (outcome === "purged") purged++;
    }
    return purged;
  }

  return {
    purgeTree,

    /** Every replica ticks; the time is the database's (purge_at <= now()). */
    async tick(): Promise<number> {
      let purged = 0;
      for (const t of await res.repos.purge.due(perTick)) purged += await purgeTree(t.organization_id, t.number, SCHEDULER);
      return purged;
    },
  };
}
export type PurgeSystem = ReturnType<typeof purgeSystem>;
