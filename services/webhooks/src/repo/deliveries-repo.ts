import { DEFAULT_ENDPOINT_EVENT_TYPES, EVENT_RETENTION_DAYS, type EventType, type WebhookEnvelope, webhookBody } from "@tasksvc/contracts";
import { deleteInBatches, jsonb, type Sql } from "@tasksvc/db";

export interface FanOutEvent {
  eventId: string;
  eventType: EventType;
  organizationId: string;
  /** Endpoints created later do not receive it. */
  occurredAt: string;
  /** The exact text signed: stored once for the event. */
  body: string;
  aboutEndpoint: string | null;
  traceparent: string | null;
}

/** A delivery made before bodies were stored has only its own payload. */
export const BODY_COLUMNS = `b.body, case when b.body is null then d.payload end as payload,
  coalesce(b.occurred_at, (d.payload->>'timestamp')::timestamptz) as occurred_at`;
export interface BodyColumns {
  body: string | null;
  payload: WebhookEnvelope | null;
  occurred_at: Date;
}

/** Null only for a delivery whose body the sweep took while the delivery was being made. */
export function deliveryBody(r: BodyColumns & { event_id: string; event_type: EventType }): string | null {
  if (r.body !== null) return r.body;
  if (r.payload === null) return null;
  const { timestamp, data } = r.payload;
  const changes = "changes" in r.payload ? r.payload.changes : undefined;
  return webhookBody({ id: r.event_id, type: r.event_type, created_at: new Date(timestamp).toISOString(), data, changes });
}

/** Each count stops at 100000 (an index walk, bounded). */
export interface Backlog {
  due: number;
  later: number;
  delivering: number;
}

const IDS_PER_TRY = 16;

export function deliveriesRepo(sql: Sql) {
  return {
    async backlog(): Promise<Backlog> {
      const [r] = await sql<Backlog[]>`
        select (select count(*)::int from (select 1 from deliveries where state = 'PENDING' and next_attempt_at <= now() limit 100000) a) as due,
               (select count(*)::int from (select 1 from deliveries where state = 'PENDING' and next_attempt_at > now() limit 100000) b) as later,
               (select count(*)::int from (select 1 from deliveries where state = 'DELIVERING' limit 100000) c) as delivering`;
      return r ?? { due: 0, later: 0, delivering: 0 };
    },

    /** Work still to do (PENDING, DELIVERING) is never deleted, however old. */
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

    /** A day past the log's retention, so a replay of the log's oldest delivery made meanwhile still finds its body. */
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

    /** Those of `organizationIds` with an endpoint, enabled or not: an index probe each. */
    async organizationsWithEndpoints(organizationIds: readonly string[]): Promise<string[]> {
      const rows = await sql<{ organization_id: string }[]>`
        select o as organization_id from unnest(${organizationIds as string[]}::text[]) o
        where exists (select 1 from endpoints e where e.organization_id = o)`;
      return rows.map((r) => r.organization_id);
    },

    /**
     * Safe to repeat and to run concurrently: the fan-out's unique key drops every second row (no
     * conflict target: a collision on the live-delivery key also means the row exists). Rows go in in
     * (event, endpoint) order, so two replicas never deadlock. The endpoint's time is truncated to
     * milliseconds, or one created just before the event would miss it (decision 0014).
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
              and (ev.event_type = any (e.event_types) or (cardinality(e.event_types) = 0 and ev.event_type = any (${DEFAULT_ENDPOINT_EVENT_TYPES as string[]}::text[])))
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
