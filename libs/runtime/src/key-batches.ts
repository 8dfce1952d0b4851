/**
 * Group commit for work that queues on one lock per key (an organization's): at most one batch per
 * key runs at a time in this process, and the calls that arrive meanwhile wait to go together in
 * the next, at most `max` at once. Alone, a call runs at once. A batch that fails is run again one
 * call at a time, so one call the database refuses fails alone.
 */
export function keyBatches<T, R>(max: number, run: (key: string, items: readonly T[]) => Promise<readonly R[]>): (key: string, item: T) => Promise<R> {
  if (!Number.isInteger(max) || max < 1) throw new Error("keyBatches: max must be a positive integer");
  interface Waiting {
    item: T;
    resolve(r: R): void;
    reject(e: unknown): void;
  }
  /** A key is here while its batches run; its queue holds the calls for the next. */
  const queues = new Map<string, Waiting[]>();

  async function runOne(key: string, w: Waiting): Promise<void> {
    try {
      const [r] = await run(key, [w.item]);
      w.resolve(r as R);
    } catch (e) {
      w.reject(e);
    }
  }

  async function drain(key: string, queue: Waiting[]): Promise<void> {
    while (queue.length > 0) {
      const batch = queue.splice(0, max);
      if (batch.length === 1) {
        await runOne(key, batch[0] as Waiting);
        continue;
      }
      let results: readonly R[] | undefined;
      try {
        results = await run(
          key,
          batch.map((w) => w.item),
        );
        if (results.length !== batch.length) throw new Error(`keyBatches: ${batch.length} items gave ${results.length} results`);
      } catch {
        results = undefined;
      }
      if (results === undefined) for (const w of batch) await runOne(key, w);
      else for (const [i, w] of batch.entries()) w.resolve(results[i] as R);
    }
    queues.delete(key);
  }

  return (key, item) =>
    new Promise<R>((resolve, reject) => {
      const waiting = { item, resolve, reject };
      const queue = queues.get(key);
      if (queue) {
        queue.push(waiting);
        return;
      }
      const fresh = [waiting];
      queues.set(key, fresh);
      void drain(key, fresh);
    });
}
