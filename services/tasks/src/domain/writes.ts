import type { Caller } from "@tasksvc/contracts";
import { idempotentWrite } from "@tasksvc/db";
import { recurrenceOccurrences } from "@tasksvc/telemetry";
import type { Repositories } from "../repo/repositories.js";
import type { TasksResources } from "./resources.js";

/** What a write reports besides its answer: the tasks it changed and the occurrences it made. */
export interface WriteEffects {
  /** Tasks the write changed, for the caches of every replica. */
  touched: number[];
  /** Occurrences of recurring tasks it made (for the scheduler's metric, once committed). */
  occurred: number;
}

/**
 * The one way a task, project or dependency write runs: once per idempotency key (libs/db
 * idempotentWrite), in one transaction, then, once committed, the relay woken and every replica's
 * copy of the tasks it touched dropped before the reply.
 */
export function keyedWrites(res: TasksResources) {
  return async function write<T>(c: Caller, operation: string, fn: (r: Repositories, w: WriteEffects) => Promise<T>): Promise<T> {
    const w: WriteEffects = { touched: [], occurred: 0 };
    return idempotentWrite({
      records: res.repos.idempotency,
      tx: res.tx,
      credentialId: c.credentialId,
      key: c.idempotencyKey,
      operation,
      work: (r) => {
        // A deadlock runs the work again.
        w.touched = [];
        w.occurred = 0;
        return fn(r, w);
      },
      async afterCommit() {
        res.written();
        recurrenceOccurrences.inc(w.occurred);
        if (w.touched.length) {
          // Before the reply: no replica may answer a later read from a copy older than this write
          // (on a cluster, where the broadcast may come late or not at all, getTask checks the
          // copy's row version: decision 0017).
          res.cache.invalidate(c.organizationId, w.touched);
          await res.changed(c.organizationId, w.touched);
        }
      },
    });
  };
}
export type KeyedWrite = ReturnType<typeof keyedWrites>;
