import { webhookJobsSubject, type DeliveryJob } from "@tasksvc/contracts";
import type { Database } from "@tasksvc/db";
import type { Logger } from "@tasksvc/logger";
import { encodeJson, jetstream, sleeper, type NatsConnection } from "@tasksvc/nats";
import { attemptsRepo, type Claimed } from "./repo/attempts-repo.js";
import type { AttemptsService } from "./domain/attempts.js";

export interface DispatcherOptions {
  db: Database;
  nc: NatsConnection;
  namespace: string;
  log: Logger;
  attempts: AttemptsService;
  /** WEBHOOK_LEASE: how long an attempt may stay unreported before it is dispatched again. */
  leaseMs: number;
  /** WEBHOOK_ENDPOINT_CONCURRENCY: attempts in flight per endpoint, across every worker. */
  endpointConcurrency: number;
  /** How often to look for due retries and expired leases when nothing wakes it (default 250 ms). */
  pollMs?: number;
  /** Deliveries claimed per transaction (default 500). */
  batch?: number;
  /**
   * The least time between two passes (default 10 ms): wakes that come faster (every event fanned
   * out, every report recorded) are served together by the next pass, not one pass each.
   */
  gapMs?: number;
}

export interface Dispatcher {
  /** New or freed work: dispatch now rather than at the next poll. */
  wake(): void;
  stop(): Promise<void>;
}

/** A claim whose job could not be published is due again after this long. */
const UNPUBLISHED_RETRY_MS = 1000;

/**
 * Turns due deliveries into jobs on the job stream (decision 0015). Postgres holds the truth: a
 * claim (PENDING → DELIVERING with a lease) commits first, then its jobs are published, one per
 * endpoint; a job that cannot be published gives its claims back. A job the stream loses, or a
 * worker killed mid-call, leaves a lease that runs out: the next pass counts that attempt and
 * dispatches the delivery again. Every replica runs one; an advisory lock serializes
 * their passes, so the per-endpoint bound holds across replicas.
 */
export function startDispatcher(o: DispatcherOptions): Dispatcher {
  const js = jetstream(o.nc);
  const subject = webhookJobsSubject(o.namespace);
  const pollMs = o.pollMs ?? 250;
  const batch = o.batch ?? 500;
  const gapMs = o.gapMs ?? 10;
  // Leases run for seconds at least: looking for expired ones once a second is plenty.
  let expiryCheckedAt = 0;
  let stopping = false;
  let again = true;
  const idle = sleeper();

  /** One job per endpoint: the attempts of one endpoint claimed in one pass travel as one message. */
  function jobsOf(claimed: readonly Claimed[]): DeliveryJob[] {
    const byEndpoint = new Map<string, DeliveryJob>();
    for (const c of claimed) {
      const job = byEndpoint.get(c.endpoint_id);
      if (job) job.deliveries.push({ delivery_id: c.delivery_id, attempt: c.attempt });
      else
        byEndpoint.set(c.endpoint_id, {
          endpoint_id: c.endpoint_id,
          lease_until: c.lease_until,
          deliveries: [{ delivery_id: c.delivery_id, attempt: c.attempt }],
        });
    }
    return [...byEndpoint.values()];
  }

  async function publish(jobs: readonly DeliveryJob[]): Promise<void> {
    const failed: DeliveryJob[] = [];
    await Promise.all(
      jobs.map((job) =>
        js.publish(subject, encodeJson(job)).catch((err: unknown) => {
          failed.push(job);
          o.log.warn({ err, endpoint_id: job.endpoint_id }, "delivery job not published; due again shortly");
        }),
      ),
    );
    if (failed.length > 0)
      await attemptsRepo(o.db.sql).unclaim(
        failed.flatMap((j) => j.deliveries),
        UNPUBLISHED_RETRY_MS,
      );
  }

  /** One pass: expire leases, claim, publish. Answers whether a full batch was claimed (more may be due). */
  async function pass(): Promise<boolean> {
    const claimed = await o.db.tx(async (t) => {
      const repo = attemptsRepo(t);
      if (Date.now() - expiryCheckedAt >= 1000) {
        expiryCheckedAt = Date.now();
        await repo.lockDispatch();
        await o.attempts.expire(repo, await repo.expiredLeases(batch));
        return repo.claim(o.endpointConcurrency, batch, o.leaseMs);
      }
      // The lock and the claim go out together (one round trip); the server runs the claim once
      // the lock is held, with a snapshot taken then, so it counts what other passes committed.
      const [, claimed] = await Promise.all([repo.lockDispatch(), repo.claim(o.endpointConcurrency, batch, o.leaseMs)]);
      return claimed;
    });
    if (claimed.length > 0) await publish(jobsOf(claimed));
    return claimed.length === batch;
  }

  const loop = (async () => {
    while (!stopping) {
      if (!again) await idle.sleep(pollMs);
      again = false;
      if (stopping) break;
      try {
        if (await pass()) again = true;
      } catch (err) {
        o.log.warn({ err }, "dispatch pass failed; next pass as usual");
      }
      await new Promise((r) => setTimeout(r, gapMs));
    }
  })();

  return {
    wake() {
      again = true;
      idle.wake();
    },
    async stop() {
      stopping = true;
      idle.wake();
      await loop;
    },
  };
}
