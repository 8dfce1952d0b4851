import type { TaskSummary } from "@tasksvc/contracts";

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
  const max = opts.maxEntries ?? 50_000;
  const ttl = opts.ttlMs ?? 30_000;
  const now = opts.now ?? Date.now;
  const maxBytes = opts.maxBytes ?? 32 * 1024 * 1024;
  const entries = new Map<string, { summary: TaskSummary; expires: number; bytes: number }>();
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
    get(org: string, n: number): TaskSummary | undefined {
      const k = key(org, n);
      const e = entries.get(k);
      if (!e) return undefined;
      if (e.expires <= now()) {
        remove(k);
        return undefined;
      }
      return e.summary;
    },
    /** The copies of `numbers` go into `found`; answers the numbers that have none. */
    take(org: string, numbers: readonly number[], found: Map<number, TaskSummary>): number[] {
      const at = now();
      const missing = [];
      for (const n of numbers) {
        const k = key(org, n);
        const e = entries.get(k);
        if (e && e.expires > at) found.set(n, e.summary);
        else {
          if (e) remove(k);
          missing.push(n);
        }
      }
      return missing;
    },
    epoch: () => epoch,
    /** Copies read since `readEpoch`; none is kept when a change was heard meanwhile. */
    put(org: string, summaries: readonly TaskSummary[], readEpoch: number): void {
      if (readEpoch !== epoch) return;
      for (const s of summaries) {
        const k = key(org, Number(s.task_id.slice(2)));
        remove(k);
        const size = summaryBytes(s);
        if (size > maxBytes) continue;
        entries.set(k, { summary: s, expires: now() + ttl, bytes: size });
        bytes += size;
      }
      // Maps iterate in insertion order: the first key is the least recently put.
      while (entries.size > max || bytes > maxBytes) {
        const oldest = entries.keys().next();
        if (oldest.done) break;
        remove(oldest.value);
      }
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
export type SummaryCache = ReturnType<typeof summaryCache>;

/** Strings at two bytes a character (JavaScript strings may hold UTF-16): cheap, no encoding per put. */
export function summaryBytes(s: TaskSummary): number {
  let chars = s.task_id.length + s.title.length + s.owner_user_id.length + (s.parent_task_id?.length ?? 0);
  for (const a of s.assignee_ids) chars += a.length;
  return 256 + 2 * chars;
}
