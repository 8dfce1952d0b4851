import type { Caller, DeliveriesQuery, DeliveryAttempt, PageQuery, WebhookDelivery } from "@tasksvc/contracts";
import { newId } from "@tasksvc/db";
import { AppError } from "@tasksvc/errors";
import { logRepo, REPLAY_FAILED_MAX } from "../repo/log-repo.js";
import type { WebhooksResources } from "./resources.js";

interface Page<T> {
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
}

const endpointNotFound = () => new AppError("resource_not_found", "No webhook endpoint with that id exists in this organization.");
const deliveryNotFound = () => new AppError("resource_not_found", "No delivery with that id exists for this webhook endpoint.");

/** An endpoint's delivery log (spec 2.9) and its replays (spec 3.3, 4.1). */
export function deliveryLogService(res: WebhooksResources) {
  const repo = logRepo(res.db.sql);

  async function requireEndpoint(c: Caller, endpointId: string): Promise<void> {
    if (!(await repo.endpointExists(c.organizationId, endpointId))) throw endpointNotFound();
  }

  return {
    /** Newest first; 404 for an endpoint of another organization, even though its page would be empty. */
    async listDeliveries(c: Caller, endpointId: string, q: DeliveriesQuery): Promise<Page<WebhookDelivery>> {
      await requireEndpoint(c, endpointId);
      return repo.deliveries(c.organizationId, endpointId, q.limit, q.after, q.state);
    },

    /** In attempt order (DESIGN.md 4): when, the status or the error class, how long. */
    async listAttempts(c: Caller, endpointId: string, deliveryId: string, q: PageQuery): Promise<Page<DeliveryAttempt>> {
      await requireEndpoint(c, endpointId);
      if (!(await repo.deliveryExists(c.organizationId, endpointId, deliveryId))) throw deliveryNotFound();
      return repo.attempts(deliveryId, q.limit, q.after);
    },

    /**
     * Spec 3.3: a new PENDING row, the original unchanged; 409 delivery_already_pending while the
     * event has a live delivery. No Idempotency-Key: a retry of a replay that went through is
     * that same 409 (or, once the first replay finished, a further replay, which is harmless).
     */
    async replayDelivery(c: Caller, endpointId: string, deliveryId: string): Promise<WebhookDelivery> {
      await requireEndpoint(c, endpointId);
      const row = await repo.replay(c.organizationId, endpointId, deliveryId, newId("whd"));
      if (!row) throw deliveryNotFound();
      res.wake();
      return row;
    },

    /**
     * "Retry now": a PENDING delivery's next attempt becomes due at once (the schedule, or a
     * receiver's Retry-After, had it minutes or hours away), and the dispatcher is woken. It only
     * moves a time: calling it again, or while an attempt is in flight (DELIVERING, answered as it
     * is), makes no second attempt. A finished delivery is 409 delivery_not_pending: a replay
     * sends it again. An endpoint that is disabled keeps it waiting until it is enabled.
     */
    async retryDelivery(c: Caller, endpointId: string, deliveryId: string): Promise<WebhookDelivery> {
      await requireEndpoint(c, endpointId);
      let found = await repo.retryNow(c.organizationId, endpointId, deliveryId);
      // Not PENDING at the update but PENDING at the read: an attempt in flight failed meanwhile.
      if (found && !found.pending && found.delivery.state === "PENDING") found = await repo.retryNow(c.organizationId, endpointId, deliveryId);
      if (!found) throw deliveryNotFound();
      if (found.pending) res.wake();
      else if (found.delivery.state !== "DELIVERING" && found.delivery.state !== "PENDING") {
        throw new AppError("delivery_not_pending", `This delivery is ${found.delivery.state}: no attempt of it is waiting. Replay it to send the event again.`);
      }
      return found.delivery;
    },

    /** Spec 4.1: never re-enables the endpoint; a replay to a disabled one waits until it is enabled again. */
    async replayFailed(c: Caller, endpointId: string, since: string): Promise<{ replayed_count: number }> {
      await requireEndpoint(c, endpointId);
      const ids = Array.from({ length: REPLAY_FAILED_MAX }, () => newId("whd"));
      const replayed = await repo.replayFailed(c.organizationId, endpointId, since, ids);
      if (replayed > 0) res.wake();
      return { replayed_count: replayed };
    },
  };
}
export type DeliveryLogService = ReturnType<typeof deliveryLogService>;
