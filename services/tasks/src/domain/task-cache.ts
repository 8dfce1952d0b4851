import type { Task } from "@tasksvc/contracts";
import { copies } from "@tasksvc/runtime";

export interface TaskCacheOptions {
  maxEntries?: number;
  /** A task's notes alone may be 100,000 characters, so a bound in entries alone could hold gigabytes. */
  maxBytes?: number;
  /** Safety net only: entries are dropped by invalidations long before this. */
  ttlMs?: number;
  now?: () => number;
}

export interface CachedTask {
  task: Task;
  version: string;
}

/**
 * Every write broadcasts the changed numbers and flushes before it replies. On one NATS server
 * that makes a later read find the entry gone; on a cluster it need not, so each entry keeps its
 * row's version and there a hit is served only once the row's current version matches it
 * (decisions 0008, 0017). A read that raced a write is stored only if no invalidation arrived
 * while it ran (the epoch); losing the NATS connection could lose broadcasts, so it clears the cache.
 */
export function taskCache(opts: TaskCacheOptions = {}) {
  const c = copies<CachedTask>({
    maxEntries: opts.maxEntries ?? 20_000,
    maxBytes: opts.maxBytes ?? 64 * 1024 * 1024,
    ttlMs: opts.ttlMs,
    now: opts.now,
    sizeOf: (e) => taskBytes(e.task),
  });
  return {
    get: c.get,
    epoch: c.epoch,
    put(org: string, n: number, task: Task, version: string, readEpoch: number): void {
      c.put(org, [[n, { task, version }]], readEpoch);
    },
    drop: c.drop,
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
export type TaskCache = ReturnType<typeof taskCache>;

/** Free text at two bytes a character (JavaScript strings may hold UTF-16): cheap, no encoding per put. */
export function taskBytes(task: Task): number {
  return 1024 + 2 * (task.title.length + (task.description?.length ?? 0) + (task.notes?.length ?? 0));
}
