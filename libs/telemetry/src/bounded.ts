/** How every probe and scrape-time source is read, so a sick Postgres or NATS never holds one up. */
export async function settleWithin<T>(ms: number, fn: () => T | PromiseLike<T>, fallback: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      Promise.resolve().then(fn),
      new Promise<T>((resolve) => {
        timer = setTimeout(() => resolve(fallback), ms);
      }),
    ]);
  } catch {
    return fallback;
  } finally {
    clearTimeout(timer);
  }
}

/** The several gauges of one scrape that read the same server-side figures ask once. */
export function sharedFor<T>(ms: number, fn: () => Promise<T>): () => Promise<T> {
  let last: { at: number; value: Promise<T> } | undefined;
  return () => {
    if (!last || performance.now() - last.at > ms) {
      const value = fn();
      value.catch(() => undefined); // each caller handles the failure it gets
      last = { at: performance.now(), value };
    }
    return last.value;
  };
}
