export interface EventuallyOptions {
  /** How long to keep trying. Generous by default: a busy two-core machine is slow, never wrong. */
  timeoutMs?: number;
  /** The pause between tries. */
  intervalMs?: number;
  /** What is awaited, for the message on timeout ("the outbox to drain"). */
  what?: string;
}

/**
 * Runs `check` until it passes, then answers what it returned: the one way a test waits for
 * something asynchronous, instead of a sleep. A check passes when it neither throws nor answers
 * `false`, so it may be a predicate (`() => rows === 0`) or assertions (`() => expect(x).toBe(1)`)
 * that return the value the test goes on with.
 *
 * On timeout it throws with the last failure's message (an assertion's diff), so a failing test
 * says why, not only that it waited. A check that never settles holds this up too: give the I/O
 * inside a check its own timeout.
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
    // The last try falls on the deadline itself, so a pause never eats the time left.
    await new Promise((r) => setTimeout(r, Math.min(intervalMs, left)));
  }
  const why = last instanceof Error ? last.message : String(last);
  throw new Error(`${opts.what ?? "the condition"} did not hold within ${timeoutMs} ms (${tries} tries); last failure: ${why}`, { cause: last });
}
