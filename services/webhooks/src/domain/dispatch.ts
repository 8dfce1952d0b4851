import type { DeliveryJob } from "@tasksvc/contracts";
import { webhookAttempts } from "@tasksvc/telemetry";
import { attemptsRepo, type AttemptsRepo, type Claimed, type Expired, type Pacing } from "../repo/attempts-repo.js";
import type { WebhooksResources } from "./resources.js";
import { afterFailure } from "./delivery-rules.js";

export interface DispatchOptions {
  /** WEBHOOK_LEASE: how long an attempt may stay unreported before it is dispatched again. */
  leaseMs: number;
  endpointConcurrency: number;
  batch?: number;
  /** Leases run for seconds at least, so expiries need no finer look. */
  expiryEveryMs?: number;
  publish(job: DeliveryJob): Promise<void>;
  pacing?: Partial<RatePacing>;
}

const UNPUBLISHED_RETRY_MS = 1000;

/**
 * Send times `(1 s + toleranceMs) / rate_limit` apart, each started within `toleranceMs`: any
 * rate_limit + 1 starts then span more than a second, whichever workers make them (decision 0028).
 */
export const RATE_PACING = {
  /** The worker's window after a send time: covers a timer firing late and a short GC pause. */
  toleranceMs: 50,
  /** The job's way to a worker and its signing. */
  leadMs: 100,
  /**
   * So a backlog stays PENDING in Postgres. It must exceed the dispatcher's poll (250 ms) plus the
   * lead, so that the next times are out before the last ones are used.
   */
  horizonMs: 1000,
  /** Each refill is about half a second of send times in one job, so a limited endpoint keeps two or three jobs waiting, not one per pass. */
  refillMs: 500,
} as const;
export type RatePacing = { [K in keyof typeof RATE_PACING]: number };

/**
 * Postgres holds the truth: a claim commits first, then its jobs are published; a job the stream
 * loses leaves a lease that runs out (decision 0015). An advisory lock serializes every replica's
 * passes, so the per-endpoint bound holds across replicas.
 */
export function dispatchService(res: WebhooksResources, o: DispatchOptions) {
  const batch = o.batch ?? 500;
  const expiryEveryMs = o.expiryEveryMs ?? 1000;
  const rate: RatePacing = { ...RATE_PACING, ...o.pacing };
  const pacing: Pacing = { spacingMs: 1000 + rate.toleranceMs, leadMs: rate.leadMs, horizonMs: rate.horizonMs, refillMs: rate.refillMs };
  let expiryCheckedAt = Number.NEGATIVE_INFINITY;

  /** Counted as `no_outcome`, so a delivery that kills its worker every time ends FAILED; not against the endpoint, whose fault it is not known. */
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
    webhookAttempts.inc({ outcome: "no_outcome" }, expired.length);
  }

  /** Its lease is the earliest of theirs, so a worker never starts an attempt whose lease has run out. */
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
    /** Answers whether a full batch was claimed (more may be due). */
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
        // One round trip: the claim runs once the lock is held, with a snapshot taken then, so it counts what other passes committed.
        const [, claimed] = await Promise.all([repo.lockDispatch(), repo.claim(o.endpointConcurrency, batch, o.leaseMs, pacing)]);
        return claimed;
      });
      if (claimed.length > 0) await publish(jobsOf(claimed));
      return claimed.length === batch;
    },
  };
}
export type DispatchService = ReturnType<typeof dispatchService>;
