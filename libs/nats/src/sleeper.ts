/**
 * A sleep that can be cut short: `sleep(ms)` resolves after `ms`, or at once when `wake()` is
 * called meanwhile (a wake with no sleep in progress does nothing). For loops that poll on a
 * timer and are also told when there is work (the consumer's retry pause, the webhooks
 * dispatcher).
 */
export function sleeper() {
  let wake: (() => void) | undefined;
  return {
    sleep(ms: number): Promise<void> {
      return new Promise<void>((resolve) => {
        const timer = setTimeout(done, ms);
        function done() {
          clearTimeout(timer);
          wake = undefined;
          resolve();
        }
        wake = done;
      });
    },
    wake(): void {
      wake?.();
    },
  };
}
export type Sleeper = ReturnType<typeof sleeper>;
