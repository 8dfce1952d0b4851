import { z } from "zod";
import { inDataOrder } from "./event-stream.js";
import { type Event, OrgEvent } from "./events.js";
import { inChangesOrder, type TaskChanges } from "./tasks.js";

// One concept, one builder: an event's body is built here and nowhere else. The feed's item, the
// live stream's message and (without its id) the webhook body are the same object, so a receiver
// that compares them byte for byte finds them equal.

/**
 * What a body is built from: an event's envelope as the outbox writes it, the events table keeps
 * it and the event stream carries it. `created_at` is the event's own time (its writing
 * transaction's, on the database's clock): the body shows it as `timestamp`. A probe (test event,
 * verify) passes an envelope of its own, of a type that is no event's.
 */
export interface EventEnvelope {
  id: string;
  type: string;
  created_at: string;
  data: unknown;
  changes?: TaskChanges | null | undefined;
}

/** The body's fields after its id: jsonb keeps no key order, so data and changes get the API's back. */
const bodyFields = (e: EventEnvelope) => ({
  type: e.type,
  timestamp: e.created_at,
  data: inDataOrder(e.type, e.data),
  ...(e.changes === undefined || e.changes === null ? {} : { changes: inChangesOrder(e.changes) }),
});

/** An event as the feed and the live stream show it. */
export function eventBody(e: EventEnvelope): Event {
  // The envelope's schema was checked where it came in (outbox, stream); its type decides the union's arm.
  return { id: e.id, ...bodyFields(e) } as Event;
}

/**
 * The webhook body: the event without its id (which travels as `webhook-id`), as the exact text
 * the webhooks service stores once per event, signs and sends on every attempt and replay. A
 * probe's ends with `"test":true`; a real event has no such field.
 */
export function webhookBody(e: EventEnvelope, o: { test?: true } = {}): string {
  return JSON.stringify(o.test === true ? { ...bodyFields(e), test: true } : bodyFields(e));
}

/**
 * The event stream's messages as the fan-out consumes them: checked against OrgEvent, then handed
 * on as sent, so the webhook body keeps the key order the feed's item has (jsonb's, inside `data`)
 * and any field a newer producer added. A parse would rebuild nested objects in the schema's order.
 */
export const OrgEventAsSent = z.unknown().transform((sent, ctx): OrgEvent => {
  const checked = OrgEvent.safeParse(sent);
  if (checked.success) return sent as OrgEvent;
  for (const issue of checked.error.issues) ctx.issues.push({ code: "custom", message: issue.message, path: issue.path, input: sent });
  return z.NEVER;
});
