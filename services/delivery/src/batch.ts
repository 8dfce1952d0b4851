/** Many attempts finishing at once then cost one request and one transaction in the webhooks service (decision 0015). */
export function batcher<I, O>(send: (items: I[]) => Promise<O[]>, opts: { maxSize: number; maxWaitMs: number }) {
  type Waiting = { item: I; resolve(o: O): void; reject(e: unknown): void };
  const queue: Waiting[] = [];
  let timer: NodeJS.Timeout | undefined;

  function flush(): void {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    const taken = queue.splice(0, opts.maxSize);
    if (queue.length > 0) timer = setTimeout(flush, 0);
    if (taken.length === 0) return;
    send(taken.map((w) => w.item)).then(
      (results) => {
        taken.forEach((w, i) => {
          const r = results[i];
          if (r === undefined) w.reject(new Error("batch answered fewer results than items"));
          else w.resolve(r);
        });
      },
      (err: unknown) => {
        for (const w of taken) w.reject(err);
      },
    );
  }

  return {
    add(item: I): Promise<O> {
      return new Promise<O>((resolve, reject) => {
        queue.push({ item, resolve, reject });
        if (queue.length >= opts.maxSize) flush();
        else timer ??= setTimeout(flush, opts.maxWaitMs);
      });
    },
  };
}
