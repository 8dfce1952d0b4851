import type { TaskEventType } from "@tasksvc/contracts";
import { dueEvents, dueTickDuration } from "@tasksvc/telemetry";
import type { DueRow } from "../repo/due-repo.js";
import type { Repositories } from "../repo/repositories.js";
import { toTask } from "../repo/task-json.js";
import type { TasksResources } from "./resources.js";

export interface DueDateOptions {
  /** How long before its due date a task gets task.due_soon (DUE_SOON_WINDOW). */
  windowMs: number;
  /** Tasks marked, and events written, per transaction. */
  batch?: number;
  /** Transactions per kind of event and tick; the rest waits for the next tick. */
  batchesPerTick?: number;
}

/** A transaction of this many rows stays well under a second, and holds their row locks no longer. */
const BATCH = 500;
/** 10,000 events of each kind per replica and tick: a burst (many tasks due at one midnight) drains over a few ticks. */
const BATCHES_PER_TICK = 20;

/**
 * task.due_soon and task.overdue (decision 0038), once per task and due date value. A task's row
 * records the due date each event was sent for, written in the transaction that writes the event
 * to the outbox; replicas skip the rows another holds, so however many tick, each event is written
 * once, and a restart finds what was sent in the rows.
 */
export function dueDatesSystem(res: TasksResources, o: DueDateOptions) {
  const batch = o.batch ?? BATCH;
  const batchesPerTick = o.batchesPerTick ?? BATCHES_PER_TICK;

  async function round(type: TaskEventType, mark: (r: Repositories) => Promise<DueRow[]>): Promise<number> {
    const sent = await res.tx(async (r) => {
      const rows = await mark(r);
      await r.events.emitEach(rows.map((row) => ({ organization_id: row.organization_id, type, task: toTask(row) })));
      return rows.length;
    });
    if (sent > 0) {
      res.written();
      dueEvents.inc({ type }, sent);
    }
    return sent;
  }

  async function drain(type: TaskEventType, mark: (r: Repositories) => Promise<DueRow[]>): Promise<number> {
    let sent = 0;
    for (let i = 0; i < batchesPerTick; i++) {
      const n = await round(type, mark);
      sent += n;
      if (n < batch) break;
    }
    return sent;
  }

  return {
    /**
     * Overdue first: a task whose date passed before it was ever checked is marked for both events
     * and gets task.overdue alone. The time is an argument, so tests say which instant it is.
     */
    async tick(now: Date): Promise<{ overdue: number; soon: number }> {
      const endTimer = dueTickDuration.startTimer();
      try {
        const overdue = await drain("task.overdue", (r) => r.due.markOverdue(now, batch));
        const until = new Date(now.getTime() + o.windowMs);
        const soon = await drain("task.due_soon", (r) => r.due.markSoon(now, until, batch));
        return { overdue, soon };
      } finally {
        endTimer();
      }
    },
  };
}
export type DueDatesSystem = ReturnType<typeof dueDatesSystem>;
