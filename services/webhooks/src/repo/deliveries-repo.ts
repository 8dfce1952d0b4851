import type { TaskEventType } from "@tasksvc/contracts";
import type { Sql } from "@tasksvc/db";

/** One event as the fan-out stores it: who, what, when, and the body to send. */
export interface FanOutEvent {
  eventId: string;
  eventType: TaskEventType;
  organizationId: string;
  /** When the event occurred (ISO 8601): endpoints created later do not receive it. */
  occurredAt: string;
  /** The envelope to send, `{type, timestamp, data}` (DESIGN.md 5). */
  payload: Record<string, unknown>;
}

/** The deliveries of schema `webhooks`. Bound to a pool or to one transaction. */
export function deliveriesRepo(sql: Sql) {
  /**
   * The endpoints an event goes to (spec 3.4, 6): enabled, its organization's, subscribed, and
   * existing when it occurred. Event times carry milliseconds, endpoint times microseconds: the
   * endpoint's is truncated, or one created in the same millisecond just before the event would
   * compare as newer and miss it.
   */
  const targets = (e: FanOutEvent) => sql`
    e.organization_id = ${e.organizationId}
    and e.enabled
    and (cardinality(e.event_types) = 0 or ${e.eventType} = any (e.event_types))
    and date_trunc('milliseconds', e.created_at) <= ${e.occurredAt}::timestamptz`;

  return {
    /**
     * Makes one PENDING delivery per target endpoint that has none for this event yet; answers
     * how many it made. Safe to repeat and to run concurrently for the same event: the unique key
     * of the fan-out's rows (endpoint_id, event_id where replay_of is null) drops every second row (`on conflict do nothing`, so a racing
     * replica neither fails nor doubles).
     *
     * Two statements, because ids are minted in the process (newId): the first only reads the
     * candidates; the insert joins `endpoints` again with the same conditions, so an endpoint
     * deleted or disabled in between gets nothing (and never trips the foreign key).
     */
    async fanOut(e: FanOutEvent, newId: () => string): Promise<number> {
      const candidates = await sql<{ id: string }[]>`select e.id from endpoints e where ${targets(e)}`;
      if (candidates.length === 0) return 0;
      const endpointIds = candidates.map((c) => c.id);
      const ids = endpointIds.map(() => newId());
      const rows = await sql`
        insert into deliveries (id, organization_id, endpoint_id, event_id, event_type, payload)
        select c.id, e.organization_id, e.id, ${e.eventId}, ${e.eventType}, ${sql.json(e.payload as never)}
        from unnest(${ids}::text[], ${endpointIds}::text[]) as c (id, endpoint_id)
        join endpoints e on e.id = c.endpoint_id
        where ${targets(e)}
        on conflict (endpoint_id, event_id) where replay_of is null do nothing
        returning 1`;
      return rows.length;
    },
  };
}
export type DeliveriesRepo = ReturnType<typeof deliveriesRepo>;
