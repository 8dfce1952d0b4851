import type { TaskSummary } from "@tasksvc/contracts";
import { copies } from "@tasksvc/runtime";

export interface SummaryCacheOptions {
  maxEntries?: number;
  /** A title may be long, so a bound in entries alone does not bound the memory. */
  maxBytes?: number;
  /** Safety net only: copies are dropped by the tasks service's change broadcasts long before this. */
  ttlMs?: number;
  now?: () => number;
}

/**
 * The tasks' summaries a board shows, per replica, keyed by organization and task number. The tasks
 * service broadcasts every change and flushes before it replies to the write; this service hears it
 * on the connection its requests come in by, so on one NATS server a board read made after the write's
 * reply finds the copy gone. On a cluster that order does not hold (decision 0017), and the caller
 * must not serve copies there. A lookup that raced a change is stored only if no broadcast arrived
 * while it ran (the epoch); losing the connection could lose broadcasts, so it clears the cache.
 */
export function summaryCache(opts: SummaryCacheOptions = {}) {
  const c = copies<TaskSummary>({
    maxEntries: opts.maxEntries ?? 50_000,
    maxBytes: opts.maxBytes ?? 32 * 1024 * 1024,
    ttlMs: opts.ttlMs,
    now: opts.now,
    sizeOf: summaryBytes,
  });
  return {
    get: c.get,
    take: c.take,
    epoch: c.epoch,
    /** Copies read since `readEpoch`; none is kept when a change was heard meanwhile. */
    put(org: string, summaries: readonly TaskSummary[], readEpoch: number): void {
      c.put(
        org,
        summaries.map((s) => [Number(s.task_id.slice(2)), s] as const),
        readEpoch,
      );
    },
    invalidate: c.invalidate,
    clear: c.clear,
    get size() {
      return c.size;
    },
    get bytes() {
      return c.bytes;
    },
  };
}
export type SummaryCache = ReturnType<typeof summaryCache>;

/** Strings at two bytes a character (JavaScript strings may hold UTF-16): cheap, no encoding per put. */
export function summaryBytes(s: TaskSummary): number {
  let chars = s.task_id.length + s.title.length + s.owner_user_id.length + (s.parent_task_id?.length ?? 0);
  for (const a of s.assignee_ids) chars += a.length;
  return 256 + 2 * chars;
}
