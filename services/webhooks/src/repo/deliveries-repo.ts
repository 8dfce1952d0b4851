import { currentTraceparent } from "@tasksvc/telemetry";
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

/** Ids handed to one fan-out statement; most organizations have fewer endpoints. */
const IDS_PER_TRY = 16;

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
     * of the fan-out's rows (endpoint_id, event_id where replay_of is null) drops every second
     * row (`on conflict do nothing`, so a racing replica neither fails nor doubles). No conflict
     * target: two first handlings at once collide on the live-delivery key too (both rows are
     * PENDING), and any conflict there also means the row exists.
     *
     * Ids are minted in the process (newId) and handed in, `IDS_PER_TRY` at a time: the
     * statement numbers the target endpoints and gives the n-th the n-th id. One statement for
     * the usual event; an organization with more endpoints than that takes another try with
     * enough ids, which only fills in (the key makes the first try's rows no-ops). An endpoint
     * deleted while the statement runs fails its foreign key: the consumer's retry then finds it
     * gone.
     */
    async fanOut(e: FanOutEvent, newId: () => string): Promise<number> {
      let made = 0;
      for (let size = IDS_PER_TRY; ; ) {
        const ids = Array.from({ length: size }, () => newId());
        const [row] = await sql<{ targets: number; made: number }[]>`
          with t as (
            select e.id, e.organization_id, row_number() over (order by e.id) as n from endpoints e where ${targets(e)}
          ), made as (
            insert into deliveries (id, organization_id, endpoint_id, event_id, event_type, payload, traceparent)
            select (${ids}::text[])[t.n], t.organization_id, t.id, ${e.eventId}, ${e.eventType}, ${sql.json(e.payload as never)}, ${currentTraceparent()}
            from t where t.n <= ${size}
            on conflict do nothing
            returning 1
          )
          select (select count(*) from t)::int as targets, (select count(*) from made)::int as made`;
        made += row?.made ?? 0;
        const targetCount = row?.targets ?? 0;
        if (targetCount <= size) return made;
        size = targetCount;
      }
    },
  };
}
export type DeliveriesRepo = ReturnType<typeof deliveriesRepo>;
