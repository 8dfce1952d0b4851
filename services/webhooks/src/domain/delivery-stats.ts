import type { Caller, WebhookEndpointStats } from "@tasksvc/contracts";
import { AppError } from "@tasksvc/errors";
import { statsRepo } from "../repo/stats-repo.js";
import type { WebhooksResources } from "./resources.js";

/** Deltas moved per compaction transaction; a backlog takes several, each holding its locks briefly. */
const COMPACTION_BATCH = 10_000;

const endpointNotFound = () => new AppError("resource_not_found", "No webhook endpoint with that id exists in this organization.");

/**
 * An endpoint's delivery statistics (DESIGN.md 11) and their upkeep. The counts come from a
 * rollup that triggers feed (migration 0009), so a read costs the same at a million deliveries as
 * at ten, and is exact: every change of a delivery or an attempt adds its delta in its own
 * statement. `pending` is what was created and is neither finished nor in flight; the in-flight
 * rows are counted live (at most WEBHOOK_ENDPOINT_CONCURRENCY of them), while a PENDING backlog
 * may be millions of rows, which is exactly when someone looks.
 */
export function deliveryStatsService(res: Pick<WebhooksResources, "db">) {
  const repo = statsRepo(res.db.sql);

  return {
    async endpointStats(c: Caller, endpointId: string, since: string | undefined): Promise<WebhookEndpointStats> {
      const t = await repo.totals(c.organizationId, endpointId, since);
      if (!t) throw endpointNotFound();
      return {
        since: t.since.toISOString(),
        deliveries: {
          pending: t.created - t.succeeded - t.failed - t.disabled - t.delivering,
          delivering: t.delivering,
          succeeded: t.succeeded,
          failed: t.failed,
          disabled: t.disabled,
        },
        attempts: { total: t.attempts, failed: t.attemptsFailed },
        latency_ms: { p50: t.p50, p99: t.p99 },
      };
    },

    /**
     * Folds the deltas into the rollup, one replica at a time (the others find the lock taken and
     * leave it). Answers how many deltas it moved.
     */
    async compact(): Promise<number> {
      let moved = 0;
      for (;;) {
        const n = await res.db.tx(async (t) => {
          const tx = statsRepo(t);
          if (!(await tx.lockCompaction())) return 0;
          return tx.compact(await tx.endpointsWithDeltas(), COMPACTION_BATCH);
        });
        moved += n;
        if (n < COMPACTION_BATCH) return moved;
      }
    },

    /** Rollup rows past the delivery log's retention, which no window reaches. */
    sweep: () => repo.sweep(),
  };
}
export type DeliveryStatsService = ReturnType<typeof deliveryStatsService>;
