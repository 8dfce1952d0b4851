import type { Task } from "@tasksvc/contracts";

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
  const max = opts.maxEntries ?? 20_000;
  const ttl = opts.ttlMs ?? 30_000;
  const now = opts.now ?? Date.now;
  const maxBytes = opts.maxBytes ?? 64 * 1024 * 1024;
  const entries = new Map<string, CachedTask & { expires: number; bytes: number }>();
  let bytes = 0;
  let epoch = 0;
  const remove = (k: string): void => {
    const e = entries.get(k);
    if (!e) return;
    bytes -= e.bytes;
    entries.delete(k);
  };
  const key = (org: string, n: number) => `${org}\u0000${n}`;

  return {
    get(org: string, n: number): CachedTask | undefined {
      const k = key(org, n);
      const e = entries.get(k);
      if (!e) return undefined;
      if (e.expires <= now()) {
        remove(k);
        return undefined;
      }
      return e;
    },
    epoch: () => epoch,
    put(org: string, n: number, task: Task, version: string, readEpoch: number): void {
      if (readEpoch !== epoch) return;
      const k = key(org, n);
      remove(k);
      const size = taskBytes(task);
      if (size > maxBytes) return;
      entries.set(k, { task, version, expires: now() + ttl, bytes: size });
      bytes += size;
      // Maps iterate in insertion order: the first key is the least recently put.
      while (entries.size > max || bytes > maxBytes) {
        const oldest = entries.keys().next();
        if (oldest.done) break;
        remove(oldest.value);
      }
    },
    drop(org: string, n: number): void {
      remove(key(org, n));
    },
    invalidate(org: string, numbers: readonly number[]): void {
      epoch += 1;
      for (const n of numbers) remove(key(org, n));
    },
    clear(): void {
      epoch += 1;
      entries.clear();
      bytes = 0;
    },
    get size() {
      return entries.size;
    },
    get bytes() {
      return bytes;
    },
  };
}
export type TaskCache = ReturnType<typeof taskCache>;

/** Free text at two bytes a character (JavaScript strings may hold UTF-16): cheap, no encoding per put. */
export function taskBytes(task: Task): number {
  return 1024 + 2 * (task.title.length + (task.description?.length ?? 0) + (task.notes?.length ?? 0));
}
