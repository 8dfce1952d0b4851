import { isEndpointEvent, type OrgEvent, webhookBody } from "@tasksvc/contracts";
import { newId } from "@tasksvc/db";
import { turnBatches } from "@tasksvc/runtime";
import { currentTraceparent } from "@tasksvc/telemetry";
import { type DeliveriesRepo, deliveriesRepo } from "../repo/deliveries-repo.js";
import type { WebhooksResources } from "./resources.js";

const MAX_BATCH = 64;
/** Organizations remembered as having endpoints; about 50 bytes each. */
const KNOWN_ORGANIZATIONS = 10_000;

interface Pending {
  event: OrgEvent;
  /** Taken in the consumer's span for this event (decision 0018), not in the batch's. */
  traceparent: string | null;
}

/**
 * Idempotent (the repo's unique key), which makes JetStream's at-least-once delivery and two
 * replicas safe. The events of one event-loop turn go in one statement (decision 0020); if it
 * fails, each is tried alone, and one that fails again is delivered again by its consumer.
 *
 * Most organizations have no endpoint: their events are answered by a lookup of a few bytes
 * instead of the fan-out statement, which carries each event's body. Only the answer "has
 * endpoints" is remembered, since an entry gone stale costs that statement and nothing else;
 * "has none" is asked again for every batch, so an endpoint made on another replica receives the
 * next event (decision 0056).
 */
export function fanOutService(
  res: Pick<WebhooksResources, "db">,
  repo: Pick<DeliveriesRepo, "fanOut" | "organizationsWithEndpoints"> = deliveriesRepo(res.db.sql),
) {
  const known = new Set<string>();
  const remember = (organizationId: string): void => {
    if (known.has(organizationId)) return;
    known.add(organizationId);
    if (known.size > KNOWN_ORGANIZATIONS) known.delete(known.values().next().value as string);
  };

  const fanOutBatch = turnBatches<Pending, number>(MAX_BATCH, async (items) => {
    const unknown = [...new Set(items.map((i) => i.event.organization_id).filter((o) => !known.has(o)))];
    const found = new Set(unknown.length === 0 ? [] : await repo.organizationsWithEndpoints(unknown));
    for (const o of found) remember(o);
    const due = items.flatMap((item, index) => (found.has(item.event.organization_id) || known.has(item.event.organization_id) ? [{ item, index }] : []));
    const made = items.map(() => 0);
    if (due.length === 0) return made;
    const counts = await repo.fanOut(
      due.map(({ item: { event, traceparent } }) => ({
        eventId: event.id,
        eventType: event.type,
        organizationId: event.organization_id,
        // The event's own time, not when it reached us, which a backlog may push past a newer endpoint.
        occurredAt: event.created_at,
        // Its text, stored once for the event and signed as stored on every attempt.
        body: webhookBody(event),
        aboutEndpoint: isEndpointEvent(event) ? event.data.id : null,
        traceparent,
      })),
      () => newId("whd"),
    );
    for (const [k, { index }] of due.entries()) made[index] = counts[k] ?? 0;
    return made;
  });
  return {
    fanOut(event: OrgEvent): Promise<number> {
      return fanOutBatch({ event, traceparent: currentTraceparent() });
    },
  };
}
export type FanOutService = ReturnType<typeof fanOutService>;
