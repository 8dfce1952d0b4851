import { settleWithin } from "./bounded.js";

/**
 * One readiness check's answer: "ok", or why not. Besides the general ones, the database's:
 * `standby` and `read_only` (it answers, but refuses writes), `stuck` (a transaction slot that
 * does not come back), `stalled` (an outbox relay that publishes nothing).
 */
export type CheckResult = "ok" | "unreachable" | "not_attached" | "stopping" | "starting" | "standby" | "read_only" | "stuck" | "stalled";

export type Check = () => Promise<CheckResult> | CheckResult;

export interface Readiness {
  ready: boolean;
  checks: Record<string, CheckResult>;
}

const CHECK_TIMEOUT_MS = 1000;
/** How long one round of checks answers every readiness call: about a second. */
const DEFAULT_CACHE_MS = 1000;

/**
 * A process's health: live as long as it answers at all; ready once started, while every check
 * passes, and until it begins to stop. Checks are bounded (1 s each, run together): while Postgres
 * restarts a query waits for the reconnect, and a probe must answer 503 meanwhile, not hang past
 * the prober's timeout.
 *
 * /readyz is anonymous on the gateway's public port, and each round of checks queries Postgres,
 * flushes NATS and pings services: one round answers every call for `cacheMs` after it finishes,
 * and calls while it runs wait for it, so that a flood of calls costs one round a second. The
 * phase is read on every call, never cached: a replica that begins to stop reads not ready at once.
 */
export class Health {
  private readonly checks = new Map<string, Check>();
  private phase: "starting" | "serving" | "stopping" = "starting";
  private readonly cacheMs: number;
  private readonly now: () => number;
  private round: { results: Promise<Record<string, CheckResult>>; doneAt?: number } | undefined;

  /** `now` is a monotonic clock in milliseconds (performance.now unless a test passes its own). */
  constructor(opts: { cacheMs?: number; now?: () => number } = {}) {
    this.cacheMs = opts.cacheMs ?? DEFAULT_CACHE_MS;
    this.now = opts.now ?? (() => performance.now());
  }

  /** Adds a named check (e.g. postgres, nats, consumer:<name>); the returned function removes it. */
  check(name: string, fn: Check): () => void {
    this.checks.set(name, fn);
    this.round = undefined;
    return () => {
      this.checks.delete(name);
      this.round = undefined;
    };
  }

  /** Start finished: readiness now follows the checks. */
  serving(): void {
    if (this.phase === "starting") this.phase = "serving";
  }

  /** Stopping: readiness fails from now on, whatever the checks say. */
  stopping(): void {
    this.phase = "stopping";
  }

  get state(): "starting" | "serving" | "stopping" {
    return this.phase;
  }

  async readiness(): Promise<Readiness> {
    const checks = { ...(await this.results()) };
    if (this.phase !== "serving") checks["process"] = this.phase;
    const ready = this.phase === "serving" && Object.values(checks).every((r) => r === "ok");
    return { ready, checks };
  }

  /** The latest round's results while it runs or is younger than cacheMs, else a new round's. */
  private results(): Promise<Record<string, CheckResult>> {
    const last = this.round;
    if (last && (last.doneAt === undefined || this.now() - last.doneAt < this.cacheMs)) return last.results;
    const round: { results: Promise<Record<string, CheckResult>>; doneAt?: number } = { results: this.runChecks() };
    void round.results.then(() => {
      round.doneAt = this.now();
    });
    this.round = round;
    return round.results;
  }

  private async runChecks(): Promise<Record<string, CheckResult>> {
    const entries = [...this.checks];
    const results = await Promise.all(entries.map(([, fn]) => settleWithin<CheckResult>(CHECK_TIMEOUT_MS, fn, "unreachable")));
    const checks: Record<string, CheckResult> = {};
    entries.forEach(([name], i) => {
      checks[name] = results[i] ?? "unreachable";
    });
    return checks;
  }
}

/** "ok" when `p` settles well within `ms`, else "unreachable". */
export function within(ms: number, p: PromiseLike<unknown>): Promise<"ok" | "unreachable"> {
  return settleWithin(ms, () => Promise.resolve(p).then(() => "ok" as const), "unreachable" as const);
}
