import { settleWithin } from "./bounded.js";

/** One readiness check's answer: "ok", or why not. */
export type CheckResult = "ok" | "unreachable" | "not_attached" | "stopping" | "starting";

export type Check = () => Promise<CheckResult> | CheckResult;

export interface Readiness {
  ready: boolean;
  checks: Record<string, CheckResult>;
}

const CHECK_TIMEOUT_MS = 1000;

/**
 * A process's health: live as long as it answers at all; ready once started, while every check
 * passes, and until it begins to stop. Checks are bounded (1 s each, run together): while Postgres
 * restarts a query waits for the reconnect, and a probe must answer 503 meanwhile, not hang past
 * the prober's timeout.
 */
export class Health {
  private readonly checks = new Map<string, Check>();
  private phase: "starting" | "serving" | "stopping" = "starting";

  /** Adds a named check (e.g. postgres, nats, consumer:<name>); the returned function removes it. */
  check(name: string, fn: Check): () => void {
    this.checks.set(name, fn);
    return () => this.checks.delete(name);
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
    const names = [...this.checks.keys()];
    const results = await Promise.all([...this.checks.values()].map((fn) => settleWithin<CheckResult>(CHECK_TIMEOUT_MS, fn, "unreachable")));
    const checks: Record<string, CheckResult> = {};
    names.forEach((n, i) => {
      checks[n] = results[i] ?? "unreachable";
    });
    if (this.phase !== "serving") checks["process"] = this.phase;
    const ready = this.phase === "serving" && results.every((r) => r === "ok");
    return { ready, checks };
  }
}

/** "ok" when `p` settles well within `ms`, else "unreachable". */
export function within(ms: number, p: PromiseLike<unknown>): Promise<"ok" | "unreachable"> {
  return settleWithin(ms, () => Promise.resolve(p).then(() => "ok" as const), "unreachable" as const);
}
