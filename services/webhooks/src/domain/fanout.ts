import { isEndpointEvent, type OrgEvent, webhookBody } from "@tasksvc/contracts";
import { newId } from "@tasksvc/db";
import { currentTraceparent } from "@tasksvc/telemetry";
import { deliveriesRepo, type FanOutEvent } from "../repo/deliveries-repo.js";
import type { WebhooksResources } from "./resources.js";

/** Events fanned out by one statement at most. */
const MAX_BATCH = 64;

interface Waiting {
  event: FanOutEvent;
  resolve(made: number): void;
  reject(e: unknown): void;
}

/**
 * Fan-out: an event becomes one PENDING delivery per enabled endpoint of its organization
 * subscribed to its type (an empty list means every task type, spec 6) that existed when the event
 * occurred; an endpoint's operational event never goes to the endpoint it describes. Repeating it for the same event adds nothing (the repo's unique key), which
 * is what makes JetStream's at-least-once delivery, and two replicas, safe.
 *
 * The events handed in during one turn of the event loop go to the database together, in one
 * statement (decision 0020: one statement and one socket write per event took a third of the
 * machine under a write load). Each call still answers for its own event; if the statement
 * fails, every event in it fails and its consumer delivers it again, alone or in another batch.
 */
export function fanOutService(res: Pick<WebhooksResources, "db">) {
  const repo = deliveriesRepo(res.db.sql);
  let waiting: Waiting[] = [];
  let scheduled = false;
  const flush = async (): Promise<void> => {
    scheduled = false;
    const batch = waiting.slice(0, MAX_BATCH);
    waiting = waiting.slice(batch.length);
    if (waiting.length > 0) schedule();
    try {
      const made = await repo.fanOut(
        batch.map((w) => w.event),
        () => newId("whd"),
      );
      for (const [i, w] of batch.entries()) w.resolve(made[i] ?? 0);
    } catch (e) {
      for (const w of batch) w.reject(e);
    }
  };
  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(() => void flush());
  };
  return {
    /** Answers how many deliveries this call made (0 when they all existed already). */
    fanOut(event: OrgEvent): Promise<number> {
      return new Promise<number>((resolve, reject) => {
        waiting.push({
          event: {
            eventId: event.id,
            eventType: event.type,
            organizationId: event.organization_id,
            // The event's own time, set by the tasks service in the writing transaction; not the
            // time it reached us, which a backlog or a redelivery may push past a newer endpoint.
            occurredAt: event.created_at,
            // Standard Webhooks body (DESIGN.md 5), the feed's item without its id (the `webhook-id`
            // header): its text, stored once for the event and signed as stored on every attempt.
            body: webhookBody(event),
            aboutEndpoint: isEndpointEvent(event) ? event.data.id : null,
            // Taken here, in the consumer's span for this event (decision 0018), not in the batch's.
            traceparent: currentTraceparent(),
          },
          resolve,
          reject,
        });
        schedule();
      });
    },
  };
}
export type FanOutService = ReturnType<typeof fanOutService>;
