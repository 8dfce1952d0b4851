/** `runMain` prints its message as one line, without a stack trace, and exits 1. */
export class StartupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "StartupError";
  }
}

export interface Running {
  stop(): Promise<void>;
}

/** Config stays free of the logger package. */
export interface ProcessLog {
  error(obj: object, msg: string): void;
  fatal(obj: object, msg: string): void;
}

/**
 * A promise nobody handled is a bug to log, never a reason to end a process serving other
 * requests. A synchronous uncaught exception may have left shared state half-changed, so, as
 * Node's documentation advises, the process exits for its supervisor to start a clean one.
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

/** Exits 1 when a graceful stop takes longer than `forceExitAfterMs`. */
export async function runMain(name: string, start: () => Promise<Running>, log?: ProcessLog, forceExitAfterMs = 10_000): Promise<void> {
  if (log) installProcessGuards(log);
  // Listening before start: a service logs "ready" inside start, and a SIGTERM sent on that line
  // (a supervisor, a test) used to find no listener yet and killed the process without its stop.
  // A signal during start is kept and honoured once start has finished; the force timer still
  // bounds a start that hangs.
  let running: Running | undefined;
  let signalled: string | undefined;
  const stopRunning = (r: Running, signal: string) => {
    r.stop().then(
      () => process.exit(0),
      (e: unknown) => {
        process.stderr.write(`${name}: error while stopping after ${signal}: ${String(e)}\n`);
        process.exit(1);
      },
    );
  };
  const stop = (signal: string) => {
    if (signalled !== undefined) return;
    signalled = signal;
    const force = setTimeout(() => process.exit(1), forceExitAfterMs);
    force.unref();
    if (running) stopRunning(running, signal);
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
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
  if (signalled !== undefined) stopRunning(running, signalled);
}
