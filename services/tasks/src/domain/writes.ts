import type { Caller } from "@tasksvc/contracts";
import { idempotentWrite } from "@tasksvc/db";
import { recurrenceOccurrences } from "@tasksvc/telemetry";
import type { Repositories } from "../repo/repositories.js";
import type { TasksResources } from "./resources.js";

export interface WriteEffects {
  touched: number[];
  /** For the scheduler's metric, once committed. */
  occurred: number;
}

export function keyedWrites(res: TasksResources) {
  return async function write<T>(c: Caller, operation: string, fn: (r: Repositories, w: WriteEffects) => Promise<T>): Promise<T> {
    const w: WriteEffects = { touched: [], occurred: 0 };
    return idempotentWrite({
      records: res.repos.idempotency,
      tx: res.tx,
      credentialId: c.credentialId,
      key: c.idempotencyKey,
      operation,
      organizationId: c.organizationId,
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
          // Before the reply: no replica may answer a later read from a copy older than this write (decision 0017).
          res.cache.invalidate(c.organizationId, w.touched);
          await res.changed(c.organizationId, w.touched);
        }
      },
    });
  };
}
export type KeyedWrite = ReturnType<typeof keyedWrites>;
