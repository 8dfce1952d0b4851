import type { DeliveryJob } from "@tasksvc/contracts";
import { webhookAttempts } from "@tasksvc/telemetry";
import { attemptsRepo, type AttemptsRepo, type Claimed, type Expired, type Pacing } from "../repo/attempts-repo.js";
import type { WebhooksResources } from "./resources.js";
import { afterFailure } from "./delivery-rules.js";

export interface DispatchOptions {
  /** WEBHOOK_LEASE: how long an attempt may stay unreported before it is dispatched again. */
  leaseMs: number;
  /** WEBHOOK_ENDPOINT_CONCURRENCY: attempts in flight per endpoint, across every worker. */
  endpointConcurrency: number;
  /** Deliveries claimed per transaction (default 500). */
  batch?: number;
  /** Leases run for seconds at least: a pass looks for expired ones this often (default 1 s). */
  expiryEveryMs?: number;
  /** Puts one job on the job stream; rejects when it could not. */
  publish(job: DeliveryJob): Promise<void>;
  /** Rate limits' pacing (default RATE_PACING; tests shorten or widen it). */
  pacing?: Partial<RatePacing>;
}

/** A claim whose job could not be published is due again after this long. */
const UNPUBLISHED_RETRY_MS = 1000;

/**
 * Send times for endpoints with a rate limit (DESIGN.md 11). A worker starts an attempt at its
 * send time or within `toleranceMs` after it, never later (later, it hands the attempt back). With
 * send times `(1 s + toleranceMs) / rate_limit` apart, any rate_limit + 1 starts then span more
 * than a second, whichever workers make them: no one-second window holds more than rate_limit.
 */
export const RATE_PACING = {
  /** The worker's window after a send time: covers a timer firing late and a short GC pause. */
  toleranceMs: 50,
  /** The first send time is at least this far ahead: the job's way to a worker and its signing. */
  leadMs: 100,
  /**
   * Send times are handed out this far ahead at most, so a backlog stays PENDING in Postgres.
   * It must exceed the dispatcher's poll (250 ms) plus the lead, so that the next times are out
   * before the last ones are used, whatever wakes the dispatcher.
   */
  horizonMs: 1000,
  /**
   * An endpoint gets more send times only once its next free one is this close: each refill is
   * about half a second of them in one job, so a limited endpoint keeps two or three jobs waiting
   * in the workers (each holds a job slot there, never a call slot) rather than one per pass.
   * (At rates where WEBHOOK_ENDPOINT_CONCURRENCY binds first, that bound caps them as before.)
   */
  refillMs: 500,
} as const;
export type RatePacing = { [K in keyof typeof RATE_PACING]: number };

/**
 * Turns due deliveries into jobs on the job stream (decision 0015). Postgres holds the truth: a
 * claim (PENDING → DELIVERING with a lease) commits first, then its jobs are published, one per
 * endpoint; a job that cannot be published gives its claims back. A job the stream loses leaves
 * a lease that runs out: a later pass counts that attempt and dispatches the delivery again. (A
 * worker killed mid-call is noticed sooner: its jobs go to another worker, which makes the
 * attempt again once its call window has passed; the lease, stretched over that window by the
 * start, is only the backstop.) Every replica dispatches; an advisory lock serializes their
 * passes, so the per-endpoint bound holds across replicas.
 */
export function dispatchService(res: WebhooksResources, o: DispatchOptions) {
  const batch = o.batch ?? 500;
  const expiryEveryMs = o.expiryEveryMs ?? 1000;
  const rate: RatePacing = { ...RATE_PACING, ...o.pacing };
  const pacing: Pacing = { spacingMs: 1000 + rate.toleranceMs, leadMs: rate.leadMs, horizonMs: rate.horizonMs, refillMs: rate.refillMs };
  let expiryCheckedAt = Number.NEGATIVE_INFINITY;

  /**
   * Attempts whose lease ran out unreported (a worker killed mid-call, a job the stream lost):
   * each counts as an attempt (`no_outcome`, so a delivery that kills its worker every time ends
   * FAILED instead of looping) and follows the schedule. Not counted against the endpoint: its
   * fault is not known.
   */
  async function expire(repo: AttemptsRepo, expired: readonly Expired[]): Promise<void> {
    if (expired.length === 0) return;
    const at = res.now().toISOString();
    await repo.insertAttempts(
      expired.map((e) => ({
        deliveryId: e.id,
        attempt: e.attempt,
        attemptedAt: at,
        outcome: "no_outcome",
        status: null,
        errorClass: "lease_expired",
        durationMs: null,
      })),
    );
    await repo.updateDeliveries(expired.map((e) => afterFailure(res.policy, e.id, e.attempt, null, null, e.endpointEnabled)));
    // Counted as the attempts they are (the delivery worker counts the ones it made).
    webhookAttempts.inc({ outcome: "no_outcome" }, expired.length);
  }

  /**
   * One job per endpoint: the attempts of one endpoint claimed in one pass travel as one message.
   * Its lease is the earliest of theirs (a rate-limited endpoint's run from their send times), so
   * a worker never starts an attempt whose lease has run out.
   */
  function jobsOf(claimed: readonly Claimed[]): DeliveryJob[] {
    const byEndpoint = new Map<string, DeliveryJob>();
    for (const c of claimed) {
      const attempt = { delivery_id: c.delivery_id, attempt: c.attempt, ...(c.send_at === undefined ? {} : { send_at: c.send_at }) };
      const job = byEndpoint.get(c.endpoint_id);
      if (job) {
        job.deliveries.push(attempt);
        if (c.lease_until < job.lease_until) job.lease_until = c.lease_until;
      } else
        byEndpoint.set(c.endpoint_id, {
          endpoint_id: c.endpoint_id,
          lease_until: c.lease_until,
          deliveries: [attempt],
          ...(c.send_at === undefined ? {} : { send_window_ms: rate.toleranceMs }),
        });
    }
    return [...byEndpoint.values()];
  }

  async function publish(jobs: readonly DeliveryJob[]): Promise<void> {
    const failed: DeliveryJob[] = [];
    await Promise.all(
      jobs.map((job) =>
        o.publish(job).catch((err: unknown) => {
          failed.push(job);
          res.log.warn({ err, endpoint_id: job.endpoint_id }, "delivery job not published; due again shortly");
        }),
      ),
    );
    if (failed.length > 0)
      await attemptsRepo(res.db.sql).unclaim(
        failed.flatMap((j) => j.deliveries.map((d) => ({ delivery_id: d.delivery_id, attempt: d.attempt }))),
        UNPUBLISHED_RETRY_MS,
      );
  }

  return {
    /** One pass: expire leases, claim, publish. Answers whether a full batch was claimed (more may be due). */
    async pass(): Promise<boolean> {
      const claimed = await res.db.tx(async (t) => {
        const repo = attemptsRepo(t);
        const now = res.now().getTime();
        if (now - expiryCheckedAt >= expiryEveryMs) {
          expiryCheckedAt = now;
          await repo.lockDispatch();
          await expire(repo, await repo.expiredLeases(batch));
          return repo.claim(o.endpointConcurrency, batch, o.leaseMs, pacing);
        }
        // The lock and the claim go out together (one round trip); the server runs the claim once
        // the lock is held, with a snapshot taken then, so it counts what other passes committed.
        const [, claimed] = await Promise.all([repo.lockDispatch(), repo.claim(o.endpointConcurrency, batch, o.leaseMs, pacing)]);
        return claimed;
      });
      if (claimed.length > 0) await publish(jobsOf(claimed));
      return claimed.length === batch;
    },
  };
}
export type DispatchService = ReturnType<typeof dispatchService>;
