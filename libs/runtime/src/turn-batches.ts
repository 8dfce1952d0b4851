/**
 * Calls made in one event-loop turn (the messages of one JetStream fetch, handled side by side) run
 * together as one batch of at most `max`: one transaction or statement for them all instead of one
 * each. A batch that fails is run again one call at a time, so one item the database refuses fails
 * alone and the others' consumers are not sent to retry with it.
 */
export function turnBatches<T, R>(max: number, run: (items: readonly T[]) => Promise<readonly R[]>): (item: T) => Promise<R> {
  if (!Number.isInteger(max) || max < 1) throw new Error("turnBatches: max must be a positive integer");
  interface Waiting {
    item: T;
    resolve(r: R): void;
    reject(e: unknown): void;
  }
  let waiting: Waiting[] = [];
  let scheduled = false;

  async function runOne(w: Waiting): Promise<void> {
    try {
      const [r] = await run([w.item]);
      w.resolve(r as R);
    } catch (e) {
      w.reject(e);
    }
  }

  async function flush(): Promise<void> {
    scheduled = false;
    const batch = waiting.slice(0, max);
    waiting = waiting.slice(batch.length);
    if (waiting.length > 0) schedule();
    if (batch.length === 1) return runOne(batch[0] as Waiting);
    let results: readonly R[];
    try {
      results = await run(batch.map((w) => w.item));
      if (results.length !== batch.length) throw new Error(`turnBatches: ${batch.length} items gave ${results.length} results`);
    } catch {
      await Promise.all(batch.map(runOne));
      return;
    }
    for (const [i, w] of batch.entries()) w.resolve(results[i] as R);
  }

  function schedule(): void {
    if (scheduled) return;
    scheduled = true;
    setImmediate(() => void flush());
  }

  return (item) =>
    new Promise<R>((resolve, reject) => {
      waiting.push({ item, resolve, reject });
      schedule();
    });
}
