import type { Caller, WebhookEndpointStats } from "@tasksvc/contracts";
import { AppError } from "@tasksvc/errors";
import { statsRepo } from "../repo/stats-repo.js";
import type { WebhooksResources } from "./resources.js";

/** Deltas moved per compaction transaction; a backlog takes several, each holding its locks briefly. */
const COMPACTION_BATCH = 10_000;

const endpointNotFound = () => new AppError("resource_not_found", "No webhook endpoint with that id exists in this organization.");

/**
 * From a rollup that triggers feed (migration 0009, decision 0028), so a read costs the same at a
 * million deliveries as at ten, and is exact; only the in-flight rows (a bounded few) are counted live.
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

    /** One replica at a time: the others find the lock taken and leave it. */
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

    /** No window reaches past the delivery log's retention. */
    sweep: () => repo.sweep(),
  };
}
export type DeliveryStatsService = ReturnType<typeof deliveryStatsService>;
