/**
 * The read of each item of `source`, started before the previous one's result is handed on: on
 * the export's one connection the two statements are pipelined, so Postgres reads the next chunk
 * while this process writes the current one. One result waits at most, so memory holds two chunks.
 */
export async function* readAhead<A, T>(source: AsyncIterable<A>, read: (a: A) => Promise<T>): AsyncGenerator<T> {
  let pending: Promise<T> | undefined;
  for await (const a of source) {
    const next = read(a);
    // Awaited in turn below; a failure meanwhile must not count as unhandled and stop the process.
    next.catch(() => undefined);
    if (pending !== undefined) yield await pending;
    pending = next;
  }
  if (pending !== undefined) yield await pending;
}
