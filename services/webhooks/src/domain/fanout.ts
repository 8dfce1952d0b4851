import { isEndpointEvent, type OrgEvent, webhookBody } from "@tasksvc/contracts";
import { newId } from "@tasksvc/db";
import { turnBatches } from "@tasksvc/runtime";
import { currentTraceparent } from "@tasksvc/telemetry";
import { deliveriesRepo, type FanOutEvent } from "../repo/deliveries-repo.js";
import type { WebhooksResources } from "./resources.js";

const MAX_BATCH = 64;

/**
 * Idempotent (the repo's unique key), which makes JetStream's at-least-once delivery and two
 * replicas safe. The events of one event-loop turn go in one statement (decision 0020); if it
 * fails, each is tried alone, and one that fails again is delivered again by its consumer.
 */
export function fanOutService(res: Pick<WebhooksResources, "db">) {
  const repo = deliveriesRepo(res.db.sql);
  const fanOutBatch = turnBatches<FanOutEvent, number>(MAX_BATCH, async (events) => {
    const made = await repo.fanOut([...events], () => newId("whd"));
    return events.map((_, i) => made[i] ?? 0);
  });
  return {
    fanOut(event: OrgEvent): Promise<number> {
      return fanOutBatch({
        eventId: event.id,
        eventType: event.type,
        organizationId: event.organization_id,
        // The event's own time, not when it reached us, which a backlog may push past a newer endpoint.
        occurredAt: event.created_at,
        // Its text, stored once for the event and signed as stored on every attempt.
        body: webhookBody(event),
        aboutEndpoint: isEndpointEvent(event) ? event.data.id : null,
        // Taken in the consumer's span for this event (decision 0018), not in the batch's.
        traceparent: currentTraceparent(),
      });
    },
  };
}
export type FanOutService = ReturnType<typeof fanOutService>;
