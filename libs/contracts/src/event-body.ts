import { z } from "zod";
import { inDataOrder } from "./event-stream.js";
import { type Event, OrgEvent } from "./events.js";
import { inChangesOrder, type TaskChanges } from "./tasks.js";

// An event's body is built here and nowhere else, so the feed's item, the live stream's message and the webhook body (without its id) are equal byte for byte.

/** `created_at` is the event's own time, on the database's clock; the body shows it as `timestamp`. */
export interface EventEnvelope {
  id: string;
  type: string;
  created_at: string;
  data: unknown;
  changes?: TaskChanges | null | undefined;
  /** An undo's task.updated names its rewind. */
  rewind_id?: string | null | undefined;
}

/** jsonb keeps no key order, so data and changes get the API's back. */
const bodyFields = (e: EventEnvelope) => ({
  type: e.type,
  timestamp: e.created_at,
  data: inDataOrder(e.type, e.data),
  ...(e.changes === undefined || e.changes === null ? {} : { changes: inChangesOrder(e.changes) }),
  ...(e.rewind_id === undefined || e.rewind_id === null ? {} : { rewind_id: e.rewind_id }),
});

export function eventBody(e: EventEnvelope): Event {
  // The envelope's schema was checked where it came in; its type decides the union's arm.
  return { id: e.id, ...bodyFields(e) } as Event;
}

/** The exact text the webhooks service stores once per event, then signs and sends on every attempt. */
export function webhookBody(e: EventEnvelope, o: { test?: true } = {}): string {
  return JSON.stringify(o.test === true ? { ...bodyFields(e), test: true } : bodyFields(e));
}

/** Checked, then handed on as sent: a parse would rebuild nested objects in the schema's order and drop fields a newer producer added. */
export const OrgEventAsSent = z.unknown().transform((sent, ctx): OrgEvent => {
  const checked = OrgEvent.safeParse(sent);
  if (checked.success) return sent as OrgEvent;
  for (const issue of checked.error.issues) ctx.issues.push({ code: "custom", message: issue.message, path: issue.path, input: sent });
  return z.NEVER;
});
