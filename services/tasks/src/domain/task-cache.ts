import type { Task } from "@tasksvc/contracts";

export interface TaskCacheOptions {
  /** Most entries kept; the oldest go first. */
  maxEntries?: number;
  /** Safety net only: entries are dropped by invalidations long before this. */
  ttlMs?: number;
}

/**
 * Current tasks by (organization, number), in one replica's memory (decision 0008).
 *
 * Correctness rests on invalidation, not on the TTL: every write that changes a task row
 * broadcasts the changed numbers to every replica and flushes before it replies, so a read that
 * follows the write's answer (through any gateway, on any replica) finds the entry gone — NATS
 * delivers the broadcast to each replica before any request published after it. A read that
 * raced a write may have fetched the old row: it is stored only if no invalidation arrived while
 * it ran (the epoch). Losing the connection to NATS could lose broadcasts, so it clears the cache.
 */
export function taskCache(opts: TaskCacheOptions = {}) {
  const max = opts.maxEntries ?? 20_000;
  const ttl = opts.ttlMs ?? 30_000;
  const entries = new Map<string, { task: Task; expires: number }>();
  let epoch = 0;
  const key = (org: string, n: number) => `${org}\u0000${n}`;

  return {
    get(org: string, n: number): Task | undefined {
      const k = key(org, n);
      const e = entries.get(k);
      if (!e) return undefined;
      if (e.expires <= Date.now()) {
        entries.delete(k);
        return undefined;
      }
      return e.task;
    },
    /** The epoch to pass to put() for a read that starts now. */
    epoch: () => epoch,
    put(org: string, n: number, task: Task, readEpoch: number): void {
      if (readEpoch !== epoch) return;
      const k = key(org, n);
      entries.delete(k);
      entries.set(k, { task, expires: Date.now() + ttl });
      if (entries.size > max) {
        // Maps iterate in insertion order: the first key is the least recently put.
        const oldest = entries.keys().next();
        if (!oldest.done) entries.delete(oldest.value);
      }
    },
    invalidate(org: string, numbers: readonly number[]): void {
      epoch += 1;
      for (const n of numbers) entries.delete(key(org, n));
    },
    clear(): void {
      epoch += 1;
      entries.clear();
    },
    get size() {
      return entries.size;
    },
  };
}
export type TaskCache = ReturnType<typeof taskCache>;
