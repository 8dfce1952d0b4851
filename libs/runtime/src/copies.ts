export interface CopiesOptions<V> {
  maxEntries: number;
  /** A bound in entries alone does not bound the memory when values vary in size. */
  maxBytes: number;
  /** Safety net only: copies are dropped by the owner's change broadcasts long before this. */
  ttlMs?: number | undefined;
  now?: (() => number) | undefined;
  /** An estimate, cheap enough to run on every put. */
  sizeOf(value: V): number;
}

/**
 * Copies of another service's records per replica, keyed by organization and number, dropped by
 * the owner's change broadcasts (decision 0017). A read that raced a change is kept only if no
 * broadcast arrived while it ran (the epoch); whoever may have lost broadcasts clears it all.
 * Bounded in entries and bytes; the least recently put goes first.
 */
export function copies<V>(o: CopiesOptions<V>) {
  const ttl = o.ttlMs ?? 30_000;
  const now = o.now ?? Date.now;
  const entries = new Map<string, { value: V; expires: number; bytes: number }>();
  let bytes = 0;
  let epoch = 0;
  const remove = (k: string): void => {
    const e = entries.get(k);
    if (!e) return;
    bytes -= e.bytes;
    entries.delete(k);
  };
  const key = (org: string, n: number) => `${org}\u0000${n}`;
  const live = (k: string, at: number): V | undefined => {
    const e = entries.get(k);
    if (!e) return undefined;
    if (e.expires > at) return e.value;
    remove(k);
    return undefined;
  };

  return {
    get: (org: string, n: number): V | undefined => live(key(org, n), now()),
    /** The copies of `numbers` go into `found`; answers the numbers that have none. */
    take(org: string, numbers: readonly number[], found: Map<number, V>): number[] {
      const at = now();
      const missing: number[] = [];
      for (const n of numbers) {
        const v = live(key(org, n), at);
        if (v === undefined) missing.push(n);
        else found.set(n, v);
      }
      return missing;
    },
    epoch: () => epoch,
    /** Values read since `readEpoch`: none is kept when a change was heard meanwhile. */
    put(org: string, values: Iterable<readonly [number, V]>, readEpoch: number): void {
      if (readEpoch !== epoch) return;
      for (const [n, value] of values) {
        const k = key(org, n);
        remove(k);
        const size = o.sizeOf(value);
        if (size > o.maxBytes) continue;
        entries.set(k, { value, expires: now() + ttl, bytes: size });
        bytes += size;
      }
      // Maps iterate in insertion order: the first key is the least recently put.
      while (entries.size > o.maxEntries || bytes > o.maxBytes) {
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
export type Copies<V> = ReturnType<typeof copies<V>>;
