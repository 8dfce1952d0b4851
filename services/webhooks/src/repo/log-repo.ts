import type { DeliveryAttempt, DeliveryState, WebhookDelivery } from "@tasksvc/contracts";
import { KEYSET_TIME, keyset, keysetAfter, mapPgError, PG, pageOf, type PgErrorRule, type Sql } from "@tasksvc/db";
import { AppError } from "@tasksvc/errors";

interface DeliveryRow {
  id: string;
  event_id: string;
  event_type: string;
  state: DeliveryState;
  attempt_count: number;
  last_status: number | null;
  next_attempt_at: Date | null;
  created_at: Date;
  cursor_at: string;
}

interface AttemptRow {
  attempt: number;
  attempted_at: Date;
  outcome: DeliveryAttempt["outcome"];
  status: number | null;
  error_class: string | null;
  duration_ms: number | null;
}

// Spec 2.9: never the payload. next_attempt_at only while PENDING: a row that left PENDING keeps
// whatever the worker last scheduled, which would read as a promise of another attempt.
const COLS = `id, event_id, event_type, state, attempt_count, last_status,
  case when state = 'PENDING' then next_attempt_at end as next_attempt_at, created_at`;

const toDelivery = (r: DeliveryRow): WebhookDelivery => ({
  id: r.id,
  event_id: r.event_id,
  event_type: r.event_type,
  state: r.state,
  attempt_count: r.attempt_count,
  last_status: r.last_status,
  next_attempt_at: r.next_attempt_at?.toISOString() ?? null,
  created_at: r.created_at.toISOString(),
});

const toAttempt = (r: AttemptRow): DeliveryAttempt => ({
  attempt: r.attempt,
  attempted_at: r.attempted_at.toISOString(),
  outcome: r.outcome,
  status: r.status,
  error_class: r.error_class,
  duration_ms: r.duration_ms,
});

/**
 * Spec 3.3: a replay while the event already has a live delivery for the endpoint. The partial
 * unique index deliveries_live_key is the check, so two concurrent replays cannot both pass it.
 */
const REPLAY_RULES: readonly PgErrorRule[] = [
  {
    code: PG.uniqueViolation,
    constraint: "deliveries_live_key",
    to: () =>
      new AppError(
        "delivery_already_pending",
        "This event already has a PENDING or DELIVERING delivery to this endpoint: wait for it to finish, or retry that delivery to make its next attempt now.",
      ),
  },
];

/** An endpoint's deliveries, newest first (deliveries_page_idx): `order by created_at desc, id desc`. */
const DELIVERY_PAGES = keyset("desc", ["created_at", "timestamp"], ["id", "text"]);
/** A delivery's attempts in order: `order by attempt`. */
const ATTEMPT_PAGES = keyset("asc", ["attempt", "integer"]);

/** Spec 4.1, 8: the bulk replay's hard cap per call. */
export const REPLAY_FAILED_MAX = 1000;

/** The delivery log of schema `webhooks` (spec 2.9, 3.3): reads and replays. Bound to a pool or to one transaction. */
export function logRepo(sql: Sql) {
  const cols = sql.unsafe(COLS);

  /** A replay's row: a copy of the event's delivery, PENDING and due now, naming the row it replays. */
  const replayColumns = sql`id, organization_id, endpoint_id, event_id, event_type, payload, state, attempt_count, next_attempt_at, replay_of`;

  return {
    async endpointExists(org: string, endpointId: string): Promise<boolean> {
      const rows = await sql`select 1 from endpoints where organization_id = ${org} and id = ${endpointId}`;
      return rows.length === 1;
    },

    async deliveryExists(org: string, endpointId: string, deliveryId: string): Promise<boolean> {
      const rows = await sql`select 1 from deliveries where organization_id = ${org} and endpoint_id = ${endpointId} and id = ${deliveryId}`;
      return rows.length === 1;
    },

    /** Newest first (deliveries_page_idx), optionally of one state. */
    async deliveries(org: string, endpointId: string, limit: number, after: string | undefined, state: DeliveryState | undefined) {
      const rows = await sql<DeliveryRow[]>`
        select ${cols}, to_char(created_at at time zone 'UTC', ${sql.unsafe(KEYSET_TIME)}) as cursor_at from deliveries
        where organization_id = ${org} and endpoint_id = ${endpointId}
          ${state === undefined ? sql`` : sql`and state = ${state}`}
          ${keysetAfter(sql, after, DELIVERY_PAGES)}
        order by created_at desc, id desc
        limit ${limit + 1}`;
      return pageOf(rows, limit, toDelivery, (r) => [r.cursor_at, r.id]);
    },

    /** In attempt order; the caller has checked that the delivery is the organization's. */
    async attempts(deliveryId: string, limit: number, after: string | undefined) {
      const rows = await sql<AttemptRow[]>`
        select attempt, attempted_at, outcome, status, error_class, duration_ms from attempts
        where delivery_id = ${deliveryId}
          ${keysetAfter(sql, after, ATTEMPT_PAGES)}
        order by attempt
        limit ${limit + 1}`;
      return pageOf(rows, limit, toAttempt, (r) => [r.attempt]);
    },

    /**
     * Spec 3.3: a NEW row for the delivery's event, the original unchanged. Undefined when the
     * delivery is not the endpoint's (or the organization's); delivery_already_pending when the
     * event has a live delivery, the replayed row itself included.
     */
    async replay(org: string, endpointId: string, deliveryId: string, newId: string): Promise<WebhookDelivery | undefined> {
      const [row] = await sql<DeliveryRow[]>`
        insert into deliveries (${replayColumns})
        select ${newId}, d.organization_id, d.endpoint_id, d.event_id, d.event_type, d.payload, 'PENDING', 0, now(), d.id
        from deliveries d
        where d.organization_id = ${org} and d.endpoint_id = ${endpointId} and d.id = ${deliveryId}
        returning ${cols}, '' as cursor_at`.catch((e: unknown) => mapPgError(e, REPLAY_RULES));
      return row && toDelivery(row);
    },

    /**
     * Brings a PENDING delivery's next attempt forward to now (never later than it was). Undefined
     * when the delivery is not the endpoint's (or the organization's); otherwise the row as it is
     * after, and whether it was PENDING. The state check is the update's own, under the row's
     * lock: a dispatcher that claimed it first leaves it DELIVERING, and this changes nothing.
     */
    async retryNow(org: string, endpointId: string, deliveryId: string): Promise<{ delivery: WebhookDelivery; pending: boolean } | undefined> {
      const [bumped] = await sql<DeliveryRow[]>`
        update deliveries set next_attempt_at = least(next_attempt_at, now()), updated_at = clock_timestamp()
        where organization_id = ${org} and endpoint_id = ${endpointId} and id = ${deliveryId} and state = 'PENDING'
        returning ${cols}, '' as cursor_at`;
      if (bumped) return { delivery: toDelivery(bumped), pending: true };
      const [row] = await sql<DeliveryRow[]>`
        select ${cols}, '' as cursor_at from deliveries
        where organization_id = ${org} and endpoint_id = ${endpointId} and id = ${deliveryId}`;
      return row && { delivery: toDelivery(row), pending: false };
    },

    /**
     * Spec 3.3, 4.1 bulk replay: one new PENDING row for each event whose LATEST delivery to the
     * endpoint is FAILED or DISABLED and was created at or after `since`, oldest first, at most
     * `ids.length` (one pre-minted id each). Answers how many it made.
     *
     * Latest row per event, not every matching row: the replay's own row becomes the event's
     * latest, so a second call with the same `since` skips the events already replayed (their
     * latest row is PENDING, or has since succeeded) and reaches the next ones instead of filling
     * its 1000 with events that are pending already; and an event whose original and earlier
     * replay both failed counts once. Filtering on `since` before picking the latest keeps this
     * exact (and on deliveries_page_idx): the event's latest row passes the filter whenever any of
     * its rows does, and is then the latest of those that pass.
     *
     * One statement; `on conflict do nothing` on deliveries_live_key skips events that have (or
     * are concurrently given) a live delivery, so neither a racing single replay nor a second
     * bulk replay fails this or doubles a row.
     */
    async replayFailed(org: string, endpointId: string, since: string, ids: readonly string[]): Promise<number> {
      const rows = await sql`
        with latest as (
          select distinct on (event_id) id, state, created_at from deliveries
          where organization_id = ${org} and endpoint_id = ${endpointId} and created_at >= ${since}::timestamptz
          order by event_id, created_at desc, id desc
        ), picked as (
          select id, row_number() over (order by created_at, id) as n from latest
          where state in ('FAILED', 'DISABLED')
          order by created_at, id
          limit ${ids.length}
        )
        insert into deliveries (${replayColumns})
        select (${ids}::text[])[p.n], d.organization_id, d.endpoint_id, d.event_id, d.event_type, d.payload, 'PENDING', 0, now(), d.id
        from picked p join deliveries d on d.id = p.id
        order by p.n
        on conflict (endpoint_id, event_id) where state in ('PENDING', 'DELIVERING') do nothing
        returning 1`;
      return rows.length;
    },
  };
}
export type LogRepo = ReturnType<typeof logRepo>;
