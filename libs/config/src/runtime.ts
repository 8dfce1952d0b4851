/**
 * A failure at start that a person fixes by changing a setting or starting a dependency.
 * `runMain` prints its message as one line, without a stack trace, and exits 1.
 */
export class StartupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "StartupError";
  }
}

export interface Running {
  stop(): Promise<void>;
}

/**
 * Starts a process: one clear line and exit 1 on a StartupError (or ConfigError), a stack trace
 * for anything else; on SIGTERM/SIGINT it stops gracefully (drain, close pools) and exits 0.
 */
export async function runMain(name: string, start: () => Promise<Running>): Promise<void> {
  let running: Running;
  try {
    running = await start();
  } catch (e) {
    if (e instanceof Error && (e.name === "StartupError" || e.name === "ConfigError" || e instanceof StartupError)) {
      process.stderr.write(`${name}: ${e.message}\n`);
    } else {
      process.stderr.write(`${name}: failed to start: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    }
    process.exit(1);
  }
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    const force = setTimeout(() => process.exit(1), 10_000);
    force.unref();
    running.stop().then(
      () => process.exit(0),
      (e: unknown) => {
        process.stderr.write(`${name}: error while stopping after ${signal}: ${String(e)}\n`);
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
}
