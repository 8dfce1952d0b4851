import type { TaskEvent } from "@tasksvc/contracts";
import { newId } from "@tasksvc/db";
import type { DeliveriesRepo } from "../repo/deliveries-repo.js";

/**
 * Issue 11, fan-out: a task event becomes one PENDING delivery per enabled endpoint of its
 * organization subscribed to its type (an empty list means every type, spec 6) that existed when
 * the event occurred. Repeating it for the same event adds nothing (the repo's unique key), which
 * is what makes JetStream's at-least-once delivery, and two replicas, safe.
 */
export function fanOutService(deps: { repo: DeliveriesRepo }) {
  return {
    /** Answers how many deliveries this call made (0 when they all existed already). */
    async fanOut(event: TaskEvent): Promise<number> {
      return deps.repo.fanOut(
        {
          eventId: event.id,
          eventType: event.type,
          organizationId: event.organization_id,
          // The event's own time, set by the tasks service in the writing transaction; not the
          // time it reached us, which a backlog or a redelivery may push past a newer endpoint.
          occurredAt: event.created_at,
          // Standard Webhooks body (DESIGN.md 5); the id travels as the `webhook-id` header.
          payload: { type: event.type, timestamp: event.created_at, data: event.data },
        },
        () => newId("whd"),
      );
    },
  };
}
export type FanOutService = ReturnType<typeof fanOutService>;
