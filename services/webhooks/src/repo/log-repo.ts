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

// Never the payload. next_attempt_at only while PENDING: a row that left it keeps the worker's last schedule, which would read as a promise.
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

/** The partial unique index deliveries_live_key is the check, so two concurrent replays cannot both pass it. */
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

const DELIVERY_PAGES = keyset("desc", ["created_at", "timestamp"], ["id", "text"]);
const ATTEMPT_PAGES = keyset("asc", ["attempt", "integer"]);

export const REPLAY_FAILED_MAX = 1000;

export function logRepo(sql: Sql) {
  const cols = sql.unsafe(COLS);

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

    async attempts(deliveryId: string, limit: number, after: string | undefined) {
      const rows = await sql<AttemptRow[]>`
        select attempt, attempted_at, outcome, status, error_class, duration_ms from attempts
        where delivery_id = ${deliveryId}
          ${keysetAfter(sql, after, ATTEMPT_PAGES)}
        order by attempt
        limit ${limit + 1}`;
      return pageOf(rows, limit, toAttempt, (r) => [r.attempt]);
    },

    async replay(org: string, endpointId: string, deliveryId: string, newId: string): Promise<WebhookDelivery | undefined> {
      const [row] = await sql<DeliveryRow[]>`
        insert into deliveries (${replayColumns})
        select ${newId}, d.organization_id, d.endpoint_id, d.event_id, d.event_type, d.payload, 'PENDING', 0, now(), d.id
        from deliveries d
        where d.organization_id = ${org} and d.endpoint_id = ${endpointId} and d.id = ${deliveryId}
        returning ${cols}, '' as cursor_at`.catch((e: unknown) => mapPgError(e, REPLAY_RULES));
      return row && toDelivery(row);
    },

    /** The state check is the update's own, under the row's lock: a dispatcher that claimed it first leaves it DELIVERING. */
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
     * The latest row per event, so a second call with the same `since` reaches the next events (the
     * replays' rows are now the latest) and an event that failed twice counts once (decision 0015).
     * `on conflict do nothing` on deliveries_live_key: a racing replay neither fails this nor doubles a row.
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
