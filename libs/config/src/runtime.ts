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

/** What runMain logs with (a pino logger fits; config stays free of the logger package). */
export interface ProcessLog {
  error(obj: object, msg: string): void;
  fatal(obj: object, msg: string): void;
}

/**
 * The process-level rule (issue 9): a promise nobody handled is a bug to log, never a reason to
 * end a process that serves other requests. Every request path is asynchronous, so a failing
 * handler surfaces here at worst, after it has already answered (serve() and the gateway turn
 * every failure into an error reply first). A synchronous uncaught exception is different: it
 * unwound through code that may have left shared state half-changed, so, as Node's documentation
 * advises, it is logged and the process exits for its supervisor to start a clean one.
 */
export function installProcessGuards(log: ProcessLog): void {
  process.on("unhandledRejection", (reason) => {
    log.error({ err: reason }, "unhandled promise rejection (process kept running)");
  });
  process.on("uncaughtException", (err) => {
    log.fatal({ err }, "uncaught exception; exiting");
    process.exit(1);
  });
}

/**
 * Starts a process: one clear line and exit 1 on a StartupError (or ConfigError), a stack trace
 * for anything else; on SIGTERM/SIGINT it stops gracefully (drain, close pools) and exits 0, or
 * exits 1 when the stop takes longer than `forceExitAfterMs`.
 * With `log`, installs the process guards above.
 */
export async function runMain(name: string, start: () => Promise<Running>, log?: ProcessLog, forceExitAfterMs = 10_000): Promise<void> {
  if (log) installProcessGuards(log);
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
    const force = setTimeout(() => process.exit(1), forceExitAfterMs);
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
