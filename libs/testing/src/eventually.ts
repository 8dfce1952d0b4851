export interface EventuallyOptions {
  /** Generous by default: a busy two-core machine is slow, never wrong. */
  timeoutMs?: number;
  intervalMs?: number;
  /** For the message on timeout ("the outbox to drain"). */
  what?: string;
}

/**
 * The one way a test waits for something asynchronous, instead of a sleep. On timeout it throws
 * the last failure's message, so a failing test says why. Give I/O inside a check its own timeout.
 */
export async function eventually<T>(check: () => T | Promise<T>, opts: EventuallyOptions = {}): Promise<Exclude<T, false>> {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const intervalMs = opts.intervalMs ?? 50;
  const deadline = Date.now() + timeoutMs;
  let tries = 0;
  let last: unknown;
  for (;;) {
    tries++;
    try {
      const value = await check();
      if (value !== false) return value as Exclude<T, false>;
      last = new Error("the check answered false");
    } catch (err) {
      last = err;
    }
    const left = deadline - Date.now();
    if (left <= 0) break;
    // The last try falls on the deadline itself.
    await new Promise((r) => setTimeout(r, Math.min(intervalMs, left)));
  }
  const why = last instanceof Error ? last.message : String(last);
  throw new Error(`${opts.what ?? "the condition"} did not hold within ${timeoutMs} ms (${tries} tries); last failure: ${why}`, { cause: last });
}
