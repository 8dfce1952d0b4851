import { EVENT_RETENTION_DAYS, type EventType, type WebhookEnvelope, webhookBody } from "@tasksvc/contracts";
import { deleteInBatches, jsonb, type Sql } from "@tasksvc/db";

/** One event as the fan-out stores it: who, what, when, and the body to send. */
export interface FanOutEvent {
  eventId: string;
  eventType: EventType;
  organizationId: string;
  /** When the event occurred (ISO 8601): endpoints created later do not receive it. */
  occurredAt: string;
  /** The body to send, as the exact text signed (webhookBody): stored once for the event. */
  body: string;
  /** The endpoint an operational event describes, which never receives it; null for a task event. */
  aboutEndpoint: string | null;
  /** The trace the event's handling runs in (W3C traceparent), stored on each delivery; null untraced. */
  traceparent: string | null;
}

/**
 * A delivery's body, for a statement over `deliveries d` left joined to `event_bodies b` on the
 * event id: the event's stored text, or, for a delivery made before bodies were stored, its own
 * payload (and the event's time from either).
 */
export const BODY_COLUMNS = `b.body, case when b.body is null then d.payload end as payload,
  coalesce(b.occurred_at, (d.payload->>'timestamp')::timestamptz) as occurred_at`;
export interface BodyColumns {
  body: string | null;
  payload: WebhookEnvelope | null;
  occurred_at: Date;
}

/**
 * The text a delivery sends: its event's stored body, or its old payload built into one by the
 * same builder (the same text on every attempt from now on). Null only for a delivery whose body
 * the sweep took while the delivery was being made, which has nothing to send.
 */
export function deliveryBody(r: BodyColumns & { event_id: string; event_type: EventType }): string | null {
  if (r.body !== null) return r.body;
  if (r.payload === null) return null;
  const { timestamp, data } = r.payload;
  const changes = "changes" in r.payload ? r.payload.changes : undefined;
  return webhookBody({ id: r.event_id, type: r.event_type, created_at: new Date(timestamp).toISOString(), data, changes });
}

/** Deliveries waiting or in flight, each count stopping at 100000 (an index walk, bounded). */
export interface Backlog {
  /** PENDING and due now. */
  due: number;
  /** PENDING and due later (a retry's wait). */
  later: number;
  delivering: number;
}

/** Ids handed to one fan-out statement; most organizations have fewer endpoints. */
const IDS_PER_TRY = 16;

/** The deliveries of schema `webhooks`. Bound to a pool or to one transaction. */
export function deliveriesRepo(sql: Sql) {
  return {
    /** The backlog, counted at scrape time; one statement. */
    async backlog(): Promise<Backlog> {
      const [r] = await sql<Backlog[]>`
        select (select count(*)::int from (select 1 from deliveries where state = 'PENDING' and next_attempt_at <= now() limit 100000) a) as due,
               (select count(*)::int from (select 1 from deliveries where state = 'PENDING' and next_attempt_at > now() limit 100000) b) as later,
               (select count(*)::int from (select 1 from deliveries where state = 'DELIVERING' limit 100000) c) as delivering`;
      return r ?? { due: 0, later: 0, delivering: 0 };
    },

    /**
     * The delivery log's retention: deletes finished deliveries (SUCCEEDED, FAILED, DISABLED)
     * created more than EVENT_RETENTION_DAYS (30) ago, their attempts with them, `batch` rows per
     * statement. The log then shows what the events feed shows. Work still to do (PENDING,
     * DELIVERING) is never deleted, however old. Answers how many it deleted.
     */
    async sweep(batch = 10_000): Promise<number> {
      return deleteInBatches(batch, async () => {
        const rows = await sql`
          delete from deliveries where id in (
            select id from deliveries
            where created_at <= now() - make_interval(days => ${EVENT_RETENTION_DAYS}) and state in ('SUCCEEDED', 'FAILED', 'DISABLED')
            limit ${batch})
          returning 1`;
        return rows.length;
      });
    },

    /**
     * The stored bodies' retention: deletes bodies that no delivery points at any more (the log
     * sweep took them, or the event's endpoints went), so a delivery left in the log can still be
     * sent and replayed. A day past the log's retention: a replay of the log's oldest delivery,
     * made while this runs, finds its body still there. Answers how many it deleted.
     */
    async sweepBodies(batch = 10_000): Promise<number> {
      return deleteInBatches(batch, async () => {
        const rows = await sql`
          delete from event_bodies where event_id in (
            select b.event_id from event_bodies b
            where b.occurred_at <= now() - make_interval(days => ${EVENT_RETENTION_DAYS + 1})
              and not exists (select 1 from deliveries d where d.event_id = b.event_id)
            limit ${batch})
          returning 1`;
        return rows.length;
      });
    },

    /**
     * Makes one PENDING delivery per target endpoint that has none for the event yet, for several
     * events in one statement (the fan-out batches the events its consumer holds at once,
     * decision 0020); answers how many each event made, in order. The targets of an event (spec
     * 3.4, 6): enabled endpoints of its organization, subscribed to its type (an empty list means
     * every task type; the endpoints' operational types only when listed), that existed when it
     * occurred, and never the endpoint an operational event describes (DESIGN.md section 11).
     * Event times carry milliseconds, endpoint times microseconds: the endpoint's is truncated, or
     * one created in the same millisecond just before the event would compare as newer and miss it.
     *
     * Safe to repeat and to run concurrently for the same event: the unique key of the fan-out's
     * rows (endpoint_id, event_id where replay_of is null) drops every second row (`on conflict
     * do nothing`, so a racing replica neither fails nor doubles, nor does the same event twice
     * in one batch). No conflict target: two first handlings at once collide on the
     * live-delivery key too (both rows are PENDING), and any conflict there also means the row
     * exists. Rows go in in (event, endpoint) order, so two replicas' statements wait for each
     * other's keys in one order and never deadlock.
     *
     * Ids are minted in the process (newId) and handed in, `IDS_PER_TRY` per event at first: the
     * statement numbers the targets and gives the n-th the n-th id. One statement for the usual
     * batch; one whose events have more endpoints than that takes another try with enough ids,
     * which only fills in (the key makes the first try's rows no-ops). An endpoint deleted while
     * the statement runs fails its foreign key: the consumer's retry then finds it gone.
     */
    async fanOut(events: FanOutEvent[], newId: () => string): Promise<number[]> {
      const made = events.map(() => 0);
      if (events.length === 0) return made;
      const input = events.map((e, ord) => ({
        ord,
        event_id: e.eventId,
        event_type: e.eventType,
        organization_id: e.organizationId,
        occurred_at: e.occurredAt,
        body: e.body,
        about_endpoint: e.aboutEndpoint,
        traceparent: e.traceparent,
      }));
      for (let size = IDS_PER_TRY * events.length; ; ) {
        const ids = Array.from({ length: size }, () => newId());
        const rows = await sql<{ ord: number; targets: number; made: number }[]>`
          with ev as (
            select * from jsonb_to_recordset(${jsonb(sql, input)}) as x(ord int, event_id text, event_type text,
              organization_id text, occurred_at timestamptz, body text, about_endpoint text, traceparent text)
          ), t as (
            select ev.ord, ev.event_id, ev.event_type, ev.traceparent, e.organization_id, e.id as endpoint_id,
              row_number() over (order by ev.event_id, e.id, ev.ord) as n
            from ev join endpoints e on e.organization_id = ev.organization_id
              and e.enabled
              and (ev.event_type = any (e.event_types) or (cardinality(e.event_types) = 0 and ev.event_type like 'task.%'))
              and e.id is distinct from ev.about_endpoint
              and date_trunc('milliseconds', e.created_at) <= ev.occurred_at
          ), made as (
            insert into deliveries (id, organization_id, endpoint_id, event_id, event_type, traceparent)
            select (${ids}::text[])[t.n], t.organization_id, t.endpoint_id, t.event_id, t.event_type, t.traceparent
            from t where t.n <= ${size}
            order by t.n
            on conflict do nothing
            returning id
          ), bodies as (
            insert into event_bodies (event_id, organization_id, occurred_at, body)
            select distinct on (ev.event_id) ev.event_id, ev.organization_id, ev.occurred_at, ev.body
            from ev where exists (select 1 from t where t.ord = ev.ord)
            order by ev.event_id
            on conflict (event_id) do nothing
          )
          select ev.ord,
            (select count(*) from t where t.ord = ev.ord)::int as targets,
            (select count(*) from made join t on made.id = (${ids}::text[])[t.n] where t.ord = ev.ord)::int as made
          from ev`;
        let targets = 0;
        for (const r of rows) {
          made[r.ord] = (made[r.ord] ?? 0) + r.made;
          targets += r.targets;
        }
        if (targets <= size) return made;
        size = targets;
      }
    },
  };
}
export type DeliveriesRepo = ReturnType<typeof deliveriesRepo>;
