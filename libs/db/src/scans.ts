import type { Caller } from "@tasksvc/contracts";
import { AppError } from "@tasksvc/errors";
import { dbScanRefused, dbScansInFlight, dbScanTooExpensive } from "@tasksvc/telemetry";
import type postgres from "postgres";
import { isPgError } from "./errors.js";

/** statement_timeout, or our cancel request at the caller's deadline. */
const QUERY_CANCELED = "57014";

export function isStatementCancelled(e: unknown): boolean {
  return isPgError(e) && e.code === QUERY_CANCELED;
}

/** Past `until` (Unix ms) the driver sends a cancel request, so a statement whose caller gave up stops at once. */
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

/**
 * The statement planned for its own values each time it runs, never on the generic plan Postgres
 * may switch a prepared statement to after five runs: for one whose best plan depends on its values
 * (a text search's words, a range on a custom field). It is sent unprepared, and the driver asks for
 * its parameters' types first: one more round trip. postgres.js honours a query's own `prepare`
 * option, which only `unsafe()` takes as an argument.
 */
export function plannedEachRun<T extends readonly postgres.MaybeRow[]>(query: postgres.PendingQuery<T>): postgres.PendingQuery<T> {
  (query as unknown as { options: { prepare?: boolean } }).options.prepare = false;
  return query;
}

export interface ScanGateOptions {
  service: string;
  connections: number;
  /** Default a quarter of the connections. */
  share?: number;
  /** Before 429 (default 1 s). */
  maxWaitMs?: number;
  /** More are refused at once (default 32). */
  maxQueued?: number;
}

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
 * A fair share of the database for reads that scan: one organization holds at most `share` of the
 * connections for them, so a tenant's heavy searches queue behind each other rather than take
 * every connection (decision 0031). A scan stopped by a time limit answers 400
 * query_too_expensive, since retrying the same work would cost the same.
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

  // An operator's override for one organization (set-limits --scans), never above the replica's connections.
  const limitOf = (share: number | undefined) => (share === undefined ? perOrg : Math.max(1, Math.min(share, opts.connections)));

  const acquire = (org: string, deadline: number | undefined, limit: number): Promise<void> => {
    const n = running.get(org) ?? 0;
    // Behind its own waiting scans even when its share was raised since they queued: never overtaken.
    if (n < limit && !queued.has(org)) {
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
      clearTimeout(next.timer);
      next.resolve();
      return;
    }
    const n = (running.get(org) ?? 1) - 1;
    if (n <= 0) running.delete(org);
    else running.set(org, n);
  };

  /** `fn` sends its statements with `cancelAt(…, until)`; `share` is the organization's own, when an operator set one. */
  async function run<T>(org: string, deadline: number | undefined, what: ScanWhat, fn: (until: number | undefined) => Promise<T>, share?: number): Promise<T> {
    await acquire(org, deadline, limitOf(share));
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
  }

  return {
    perOrg,
    run,
    /** A caller's scan: its organization, its deadline and the organization's own share, if an operator set one. */
    runFor: <T>(c: Pick<Caller, "organizationId" | "deadline" | "ctx">, what: ScanWhat, fn: (until: number | undefined) => Promise<T>): Promise<T> =>
      run(c.organizationId, c.deadline, what, fn, c.ctx.scan_share),
  };
}

export type ScanGate = ReturnType<typeof scanGate>;
