/** For loops that poll on a timer and are also told when there is work; a wake with no sleep in progress does nothing. */
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
