import { isEndpointEvent, type OrgEvent, webhookBody } from "@tasksvc/contracts";
import { newId } from "@tasksvc/db";
import { currentTraceparent } from "@tasksvc/telemetry";
import { deliveriesRepo, type FanOutEvent } from "../repo/deliveries-repo.js";
import type { WebhooksResources } from "./resources.js";

const MAX_BATCH = 64;

interface Waiting {
  event: FanOutEvent;
  resolve(made: number): void;
  reject(e: unknown): void;
}

/**
 * Idempotent (the repo's unique key), which makes JetStream's at-least-once delivery and two
 * replicas safe. The events of one event-loop turn go in one statement (decision 0020); if it
 * fails, each event's consumer delivers it again.
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
    fanOut(event: OrgEvent): Promise<number> {
      return new Promise<number>((resolve, reject) => {
        waiting.push({
          event: {
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
