import type { Task } from "@tasksvc/contracts";

export interface TaskCacheOptions {
  /** Most entries kept; the oldest go first. */
  maxEntries?: number;
  /**
   * Most bytes kept (an estimate of the tasks' size in memory); the oldest go first. A task's
   * notes alone may be 100,000 characters, so a bound in entries alone could hold gigabytes.
   */
  maxBytes?: number;
  /** Safety net only: entries are dropped by invalidations long before this. */
  ttlMs?: number;
  /** The clock entries expire on (Date.now unless a test passes its own). */
  now?: () => number;
}

/** A cached task and the version of its row it was built from (tasksRepo.rowVersion). */
export interface CachedTask {
  task: Task;
  version: string;
}

/**
 * Current tasks by (organization, number), in one replica's memory (decisions 0008, 0017).
 *
 * Every write that changes a task row broadcasts the changed numbers to every replica and flushes
 * before it replies. On one NATS server that makes a read that follows the write's answer (through
 * any gateway, on any replica) find the entry gone: the server delivers the broadcast to each
 * replica before any request published after it. On a cluster it need not (the broadcast and the
 * request travel different routes; a server that dies may lose the broadcast), so each entry keeps
 * the version of the row it was built from, and there a hit is served only once a primary-key
 * lookup of the row's current version matches it (tasks.ts getTask, `checkHits`).
 *
 * A read that raced a write may have fetched the old row: it is stored only if no invalidation
 * arrived while it ran (the epoch). Losing the connection to NATS could lose broadcasts, so it
 * clears the cache.
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
    /** The copy and its row version, to be checked against the row's current version before use. */
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
    /** The epoch to pass to put() for a read that starts now. */
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
    /** Drops one copy found out of date (its version no longer the row's); no epoch change. */
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
    /** The estimated bytes held now. */
    get bytes() {
      return bytes;
    },
  };
}
export type TaskCache = ReturnType<typeof taskCache>;

/**
 * A task's size in memory, estimated: its free text at two bytes a character (JavaScript strings
 * may hold UTF-16) and a kilobyte for the rest of the object. Cheap: no encoding per put.
 */
export function taskBytes(task: Task): number {
  return 1024 + 2 * (task.title.length + (task.description?.length ?? 0) + (task.notes?.length ?? 0));
}
