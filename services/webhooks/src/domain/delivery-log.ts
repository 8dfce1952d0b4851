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

export function deliveryLogService(res: WebhooksResources) {
  const repo = logRepo(res.db.sql);

  async function requireEndpoint(c: Caller, endpointId: string): Promise<void> {
    if (!(await repo.endpointExists(c.organizationId, endpointId))) throw endpointNotFound();
  }

  return {
    /** 404 for an endpoint of another organization, even though its page would be empty. */
    async listDeliveries(c: Caller, endpointId: string, q: DeliveriesQuery): Promise<Page<WebhookDelivery>> {
      await requireEndpoint(c, endpointId);
      return repo.deliveries(c.organizationId, endpointId, q.limit, q.after, q.state);
    },

    async listAttempts(c: Caller, endpointId: string, deliveryId: string, q: PageQuery): Promise<Page<DeliveryAttempt>> {
      await requireEndpoint(c, endpointId);
      if (!(await repo.deliveryExists(c.organizationId, endpointId, deliveryId))) throw deliveryNotFound();
      return repo.attempts(deliveryId, q.limit, q.after);
    },

    /** No Idempotency-Key: a retry of a replay that went through is the same 409 (or a harmless further replay). */
    async replayDelivery(c: Caller, endpointId: string, deliveryId: string): Promise<WebhookDelivery> {
      await requireEndpoint(c, endpointId);
      const row = await repo.replay(c.organizationId, endpointId, deliveryId, newId("whd"));
      if (!row) throw deliveryNotFound();
      res.wake();
      return row;
    },

    /**
     * It only moves a time: calling it again, or while an attempt is in flight, makes no second
     * attempt. A disabled endpoint keeps it waiting until it is enabled.
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

    /** Never re-enables the endpoint: a replay to a disabled one waits until it is enabled again. */
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
