import { AppError } from "@tasksvc/errors";
import { dbScanRefused, dbScansInFlight, dbScanTooExpensive } from "@tasksvc/telemetry";
import type postgres from "postgres";
import { isPgError } from "./errors.js";

/** query_canceled: statement_timeout, or a cancel request (ours, at the caller's deadline). */
const QUERY_CANCELED = "57014";

export function isStatementCancelled(e: unknown): boolean {
  return isPgError(e) && e.code === QUERY_CANCELED;
}

/**
 * Runs a statement that stops at `until` (Unix milliseconds): past it, the driver sends a cancel
 * request, so a statement whose caller gave up stops working at once instead of at the server's
 * statement_timeout. Undefined: only the server's limit applies.
 */
export async function cancelAt<T>(query: postgres.PendingQuery<T extends readonly postgres.MaybeRow[] ? T : never>, until: number | undefined): Promise<T> {
  if (until === undefined) return (await query) as unknown as T;
  const left = until - Date.now();
  if (left <= 0) throw Object.assign(new Error("the caller's deadline passed before the statement was sent"), { code: QUERY_CANCELED });
  const timer = setTimeout(() => void query.cancel(), left);
  try {
    return (await query) as unknown as T;
  } finally {
    clearTimeout(timer);
  }
}

export interface ScanGateOptions {
  /** The service's name, for the metrics. */
  service: string;
  /** The service's database connections in all (Database.connections). */
  connections: number;
  /** The share one organization may hold for scans at once (default a quarter). */
  share?: number;
  /** How long a scan waits for its organization's place before 429 (default 1 s). */
  maxWaitMs?: number;
  /** Scans of one organization that may wait at once; more are refused at once (default 32). */
  maxQueued?: number;
}

/** What a scan is, for the caller's answer: its operation, and what to narrow when it is too costly. */
export interface ScanWhat {
  operation: string;
  narrow: string;
}

interface Waiter {
  resolve: () => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
}

/**
 * A fair share of the database for reads that scan (lists, searches, feeds, replays): one
 * organization holds at most `share` of the service's connections for them at once, so that a
 * tenant's heavy searches queue behind each other instead of taking every connection from every
 * other tenant. Past its share a scan waits briefly for one of its organization's own to end,
 * then answers 429 with Retry-After. A scan stopped by the statement time limit or by its
 * caller's deadline answers 400 query_too_expensive: retrying the same work would cost the same.
 *
 * Per process: each replica has its own pool, and the share is of that pool. Memory is bounded
 * by the organizations scanning now (entries are removed when they reach zero) and `maxQueued`.
 */
export function scanGate(opts: ScanGateOptions) {
  const perOrg = Math.max(1, Math.floor(opts.connections * (opts.share ?? 0.25)));
  const maxWaitMs = opts.maxWaitMs ?? 1000;
  const maxQueued = opts.maxQueued ?? 32;
  const running = new Map<string, number>();
  const queued = new Map<string, Waiter[]>();
  const inFlight = dbScansInFlight.labels({ service: opts.service });
  const refused = dbScanRefused.labels({ service: opts.service });

  const busy = () => {
    refused.inc();
    return new AppError("rate_limited", "This organization already runs as many lists and searches at once as it may; retry shortly.", { retryAfter: 1 });
  };

  const acquire = (org: string, deadline: number | undefined): Promise<void> => {
    const n = running.get(org) ?? 0;
    if (n < perOrg) {
      running.set(org, n + 1);
      return Promise.resolve();
    }
    const waiters = queued.get(org) ?? [];
    if (waiters.length >= maxQueued) return Promise.reject(busy());
    const wait = Math.max(0, Math.min(maxWaitMs, (deadline ?? Number.POSITIVE_INFINITY) - Date.now()));
    return new Promise<void>((resolve, reject) => {
      const w: Waiter = {
        resolve,
        reject,
        timer: setTimeout(() => {
          const list = queued.get(org);
          const i = list?.indexOf(w) ?? -1;
          if (list && i >= 0) list.splice(i, 1);
          if (list?.length === 0) queued.delete(org);
          reject(busy());
        }, wait),
      };
      waiters.push(w);
      queued.set(org, waiters);
    });
  };

  const release = (org: string): void => {
    const waiters = queued.get(org);
    const next = waiters?.shift();
    if (waiters?.length === 0) queued.delete(org);
    if (next) {
      // The place passes straight to the next scan of the same organization.
      clearTimeout(next.timer);
      next.resolve();
      return;
    }
    const n = (running.get(org) ?? 1) - 1;
    if (n <= 0) running.delete(org);
    else running.set(org, n);
  };

  return {
    /** The most scans one organization runs at once. */
    perOrg,
    /**
     * Runs `fn` (which sends its statements with `cancelAt(…, until)`) within the organization's
     * share. `deadline` is when the caller stops waiting (Caller.deadline).
     */
    async run<T>(org: string, deadline: number | undefined, what: ScanWhat, fn: (until: number | undefined) => Promise<T>): Promise<T> {
      await acquire(org, deadline);
      inFlight.inc();
      try {
        return await fn(deadline);
      } catch (e) {
        if (!isStatementCancelled(e)) throw e;
        dbScanTooExpensive.labels({ service: opts.service, operation: what.operation }).inc();
        throw new AppError(
          "query_too_expensive",
          `This ${what.operation} takes longer than the time limit allows; ${what.narrow}. Retrying it unchanged costs the same.`,
          {
            cause: e,
          },
        );
      } finally {
        inFlight.dec();
        release(org);
      }
    },
  };
}

export type ScanGate = ReturnType<typeof scanGate>;
