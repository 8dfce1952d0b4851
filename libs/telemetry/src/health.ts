import { settleWithin } from "./bounded.js";

/** `stuck`: a transaction slot that does not come back; `stalled`: an outbox relay that publishes nothing. */
export type CheckResult = "ok" | "unreachable" | "not_attached" | "stopping" | "starting" | "standby" | "read_only" | "stuck" | "stalled";

export type Check = () => Promise<CheckResult> | CheckResult;

export interface Readiness {
  ready: boolean;
  checks: Record<string, CheckResult>;
}

const CHECK_TIMEOUT_MS = 1000;
const DEFAULT_CACHE_MS = 1000;

/**
 * Checks are bounded (1 s each, run together): while Postgres restarts a query waits for the
 * reconnect, and a probe must answer 503, not hang. /readyz is anonymous and each round queries
 * Postgres and NATS, so one round answers every call for `cacheMs`. The phase is never cached: a
 * replica that begins to stop reads not ready at once.
 */
export class Health {
  private readonly checks = new Map<string, Check>();
  private phase: "starting" | "serving" | "stopping" = "starting";
  private readonly cacheMs: number;
  private readonly now: () => number;
  private round: { results: Promise<Record<string, CheckResult>>; doneAt?: number } | undefined;

  /** `now` is a monotonic clock in milliseconds. */
  constructor(opts: { cacheMs?: number; now?: () => number } = {}) {
    this.cacheMs = opts.cacheMs ?? DEFAULT_CACHE_MS;
    this.now = opts.now ?? (() => performance.now());
  }

  check(name: string, fn: Check): () => void {
    this.checks.set(name, fn);
    this.round = undefined;
    return () => {
      this.checks.delete(name);
      this.round = undefined;
    };
  }

  serving(): void {
    if (this.phase === "starting") this.phase = "serving";
  }

  /** Readiness fails from now on, whatever the checks say. */
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

export function within(ms: number, p: PromiseLike<unknown>): Promise<"ok" | "unreachable"> {
  return settleWithin(ms, () => Promise.resolve(p).then(() => "ok" as const), "unreachable" as const);
}
