import type { AttemptOutcome, AttemptRef, CallResult, DeliveryState, EventType, StartAttempt } from "@tasksvc/contracts";
import type { Sql } from "@tasksvc/db";
import { BODY_COLUMNS, type BodyColumns, deliveryBody } from "./deliveries-repo.js";

export interface Claimed {
  delivery_id: string;
  endpoint_id: string;
  attempt: number;
  lease_until: string;
  /** Its lease runs from then. */
  send_at?: string;
}

export interface Pacing {
  /** One second plus the worker's send window: r + 1 starts then span over a second. */
  spacingMs: number;
  leadMs: number;
  horizonMs: number;
  refillMs: number;
}

export interface Expired {
  id: string;
  attempt: number;
  endpointEnabled: boolean;
}

export interface AttemptSubject {
  id: string;
  endpointId: string;
  state: DeliveryState;
  attemptCount: number;
  eventId: string;
  /** Null: gone with its event, nothing to send. */
  body: string | null;
  occurredAt: Date;
  url: string;
  enabled: boolean;
  secretSealed: string;
  previousSecretSealed: string | null;
  previousSecretExpiresAt: Date | null;
  traceparent: string | null;
  callUntil: Date | null;
  opened: boolean;
  reopened: boolean;
}

export interface DeliveryForRecord {
  id: string;
  endpointId: string;
  state: DeliveryState;
  attemptCount: number;
}

export interface EndpointStreak {
  id: string;
  enabled: boolean;
  failureCount: number;
  failingSince: Date | null;
}

export interface AttemptRow {
  deliveryId: string;
  attempt: number;
  attemptedAt: string;
  outcome: AttemptOutcome;
  status: number | null;
  errorClass: string | null;
  durationMs: number | null;
}

export interface DeliveryUpdate {
  id: string;
  state: Exclude<DeliveryState, "DELIVERING">;
  attemptCount: number;
  lastStatus: number | null;
  nextInMs: number | null;
}

export interface StreakUpdate {
  id: string;
  failureCount: number;
  failingSince: Date | null;
  /** Null: none, the stored time stays. */
  lastSuccessAt: Date | null;
  lastFailureAt: Date | null;
  disabledReason: string | null;
}

interface SubjectRow extends BodyColumns {
  id: string;
  endpoint_id: string;
  state: DeliveryState;
  attempt_count: number;
  event_id: string;
  event_type: EventType;
  url: string;
  enabled: boolean;
  secret_sealed: string;
  previous_secret_sealed: string | null;
  previous_secret_expires_at: Date | null;
  traceparent: string | null;
  call_until: Date | null;
  opened: boolean;
  reopened: boolean;
}

export function attemptsRepo(sql: Sql) {
  return {
    /** So the per-endpoint bound counts what is really in flight. */
    async lockDispatch(): Promise<void> {
      await sql`select pg_advisory_xact_lock(hashtext('webhooks.dispatch'))`;
    },

    async expiredLeases(limit: number): Promise<Expired[]> {
      const rows = await sql<{ id: string; attempt_count: number; enabled: boolean }[]>`
        select d.id, d.attempt_count, e.enabled from deliveries d join endpoints e on e.id = d.endpoint_id
        where d.state = 'DELIVERING' and d.lease_until < now()
        order by d.lease_until
        limit ${limit}
        for update of d skip locked`;
      return rows.map((r) => ({ id: r.id, attempt: r.attempt_count + 1, endpointEnabled: r.enabled }));
    },

    /**
     * The endpoints with PENDING rows are found by a loose index scan of deliveries_live_key, so a
     * hanging endpoint's backlog costs one probe (migration 0004). A rate-limited endpoint's row is
     * locked first (id order, as every writer does), SKIP LOCKED so a pass never waits on a report;
     * one skipped gets no slot this pass, never "no limit" (decision 0028).
     */
    async claim(perEndpoint: number, limit: number, leaseMs: number, pacing: Pacing): Promise<Claimed[]> {
      const rows = await sql<{ id: string; endpoint_id: string; attempt: number; lease_until: Date; send_at_ms: number | null }[]>`
        with recursive owners (endpoint_id) as (
          (select d.endpoint_id from deliveries d where d.state = 'PENDING' order by d.endpoint_id limit 1)
          union all
          select (select d.endpoint_id from deliveries d where d.state = 'PENDING' and d.endpoint_id > o.endpoint_id order by d.endpoint_id limit 1)
          from owners o where o.endpoint_id is not null
        ),
        clock as materialized (select clock_timestamp() as now),
        paced as materialized (
          select e.id, s.spacing_us,
            greatest(c.now + ${pacing.leadMs} * interval '1 millisecond', e.rate_next_at) as first_at,
            c.now + ${pacing.horizonMs} * interval '1 millisecond' as horizon_end
          from endpoints e
          cross join clock c
          cross join lateral (select ceil(${pacing.spacingMs}::float8 * 1000 / e.rate_limit)::bigint as spacing_us) s
          where e.id in (select o.endpoint_id from owners o) and e.enabled and e.rate_limit is not null
            and (e.rate_next_at is null or e.rate_next_at < c.now + ${pacing.refillMs} * interval '1 millisecond')
          order by e.id
          for no key update of e skip locked
        ),
        picked as (
          select p.id, e.id as endpoint_id, p.send_at from owners o
          join endpoints e on e.id = o.endpoint_id and e.enabled
          left join paced r on r.id = e.id
          cross join lateral (
            select ${perEndpoint}::int - count(*)::int as free from deliveries f where f.endpoint_id = e.id and f.state = 'DELIVERING'
          ) s
          cross join lateral (
            select d.id,
              r.first_at + (row_number() over (order by d.next_attempt_at, d.id) - 1) * r.spacing_us * interval '1 microsecond' as send_at
            from deliveries d
            where d.endpoint_id = e.id and d.state = 'PENDING' and d.next_attempt_at <= now()
            order by d.next_attempt_at, d.id
            limit greatest(
              case
                when e.rate_limit is null then s.free
                when r.id is null then 0
                else least(s.free, ceil(extract(epoch from r.horizon_end - r.first_at) * 1000000 / r.spacing_us)::int)
              end, 0)
          ) p
          limit ${limit}
        ),
        paced_next as (
          update endpoints e set rate_next_at = n.last_at + r.spacing_us * interval '1 microsecond'
          from (select endpoint_id, max(send_at) as last_at from picked where send_at is not null group by endpoint_id) n
          join paced r on r.id = n.endpoint_id
          where e.id = n.endpoint_id
        )
        update deliveries d set
          state = 'DELIVERING',
          lease_until = coalesce(picked.send_at, now()) + ${leaseMs} * interval '1 millisecond',
          next_attempt_at = null,
          call_until = null,
          updated_at = clock_timestamp()
        from picked where d.id = picked.id
        returning d.id, d.endpoint_id, d.attempt_count + 1 as attempt, d.lease_until,
          ceil(extract(epoch from picked.send_at) * 1000)::float8 as send_at_ms`;
      // Rounded up: never before the slot it stands for.
      return rows.map((r) => ({
        delivery_id: r.id,
        endpoint_id: r.endpoint_id,
        attempt: r.attempt,
        lease_until: r.lease_until.toISOString(),
        ...(r.send_at_ms === null ? {} : { send_at: new Date(r.send_at_ms).toISOString() }),
      }));
    },

    async unclaim(jobs: readonly AttemptRef[], delayMs: number): Promise<number> {
      if (jobs.length === 0) return 0;
      const rows = await sql`
        update deliveries d set state = 'PENDING', lease_until = null,
          next_attempt_at = now() + ${delayMs} * interval '1 millisecond', updated_at = clock_timestamp()
        from unnest(${jobs.map((j) => j.delivery_id)}::text[], ${jobs.map((j) => j.attempt)}::int[]) as j (id, attempt)
        where d.id = j.id and d.state = 'DELIVERING' and d.attempt_count + 1 = j.attempt`;
      return rows.count;
    },

    /**
     * The lease is stretched over the window, so the dispatcher never counts an attempt while its call
     * may still be going on. One statement: a row locked by a racing start or expiry is waited for,
     * then judged as it stands, so two starts never both open (decision 0033).
     */
    async start(refs: readonly StartAttempt[]): Promise<AttemptSubject[]> {
      const rows = await sql<SubjectRow[]>`
        with j as (
          select * from unnest(${refs.map((r) => r.delivery_id)}::text[], ${refs.map((r) => r.attempt)}::int[],
            ${refs.map((r) => r.window_ms ?? null)}::bigint[]) as j (id, attempt, window_ms)
        ), opened as (
          update deliveries d set
            call_until = coalesce(now() + j.window_ms * interval '1 millisecond', d.lease_until),
            lease_until = greatest(d.lease_until, now() + j.window_ms * interval '1 millisecond')
          from j
          where d.id = j.id and d.state = 'DELIVERING' and d.attempt_count + 1 = j.attempt
            and (d.call_until is null or d.call_until <= now())
          returning d.id, d.call_until
        )
        select d.id, d.endpoint_id, d.state, d.attempt_count, d.event_id, d.event_type, ${sql.unsafe(BODY_COLUMNS)}, d.traceparent,
               e.url, e.enabled, e.secret_sealed, e.previous_secret_sealed, e.previous_secret_expires_at,
               coalesce(o.call_until, d.call_until) as call_until, o.id is not null as opened,
               o.id is not null and d.call_until is not null as reopened
        from deliveries d join endpoints e on e.id = d.endpoint_id left join event_bodies b on b.event_id = d.event_id
        left join opened o on o.id = d.id
        where d.id = any(${refs.map((r) => r.delivery_id)}::text[])`;
      return rows.map((r) => ({
        id: r.id,
        endpointId: r.endpoint_id,
        state: r.state,
        attemptCount: r.attempt_count,
        eventId: r.event_id,
        body: deliveryBody(r),
        occurredAt: r.occurred_at,
        url: r.url,
        enabled: r.enabled,
        secretSealed: r.secret_sealed,
        previousSecretSealed: r.previous_secret_sealed,
        previousSecretExpiresAt: r.previous_secret_expires_at,
        traceparent: r.traceparent,
        callUntil: r.call_until,
        opened: r.opened,
        reopened: r.reopened,
      }));
    },

    /** Endpoints, then deliveries: the order every writer locks in. The second statement has a snapshot of its own. */
    async lockDeliveriesAfterEndpoints(ids: readonly string[]): Promise<{ endpoints: EndpointStreak[]; rows: DeliveryForRecord[] }> {
      const [endpoints, rows] = await Promise.all([
        sql<{ id: string; enabled: boolean; failure_count: number; failing_since: Date | null }[]>`
          select id, enabled, failure_count, failing_since from endpoints
          where id in (select endpoint_id from deliveries where id = any(${ids}::text[]))
          order by id for no key update`,
        sql<{ id: string; endpoint_id: string; state: DeliveryState; attempt_count: number }[]>`
          select id, endpoint_id, state, attempt_count from deliveries
          where id = any(${ids}::text[]) order by id for no key update`,
      ]);
      return {
        endpoints: endpoints.map((r) => ({ id: r.id, enabled: r.enabled, failureCount: r.failure_count, failingSince: r.failing_since })),
        rows: rows.map((r) => ({ id: r.id, endpointId: r.endpoint_id, state: r.state, attemptCount: r.attempt_count })),
      };
    },

    /** A `no_outcome` placeholder (its lease ran out first) is replaced by the late real outcome. */
    async insertAttempts(rows: readonly AttemptRow[]): Promise<void> {
      if (rows.length === 0) return;
      await sql`
        insert into attempts (delivery_id, attempt, attempted_at, outcome, status, error_class, duration_ms)
        select * from unnest(
          ${rows.map((r) => r.deliveryId)}::text[], ${rows.map((r) => r.attempt)}::int[], ${rows.map((r) => r.attemptedAt)}::timestamptz[],
          ${rows.map((r) => r.outcome)}::text[], ${rows.map((r) => r.status)}::int[], ${rows.map((r) => r.errorClass)}::text[],
          ${rows.map((r) => r.durationMs)}::int[])
        on conflict (delivery_id, attempt) do update set
          attempted_at = excluded.attempted_at, outcome = excluded.outcome, status = excluded.status,
          error_class = excluded.error_class, duration_ms = excluded.duration_ms
        where attempts.outcome = 'no_outcome'`;
    },

    async updateDeliveries(updates: readonly DeliveryUpdate[]): Promise<void> {
      if (updates.length === 0) return;
      await sql`
        update deliveries d set
          state = u.state, attempt_count = u.attempt_count, last_status = u.last_status, lease_until = null,
          next_attempt_at = case when u.next_in_ms is null then null else now() + u.next_in_ms * interval '1 millisecond' end,
          updated_at = clock_timestamp()
        from unnest(
          ${updates.map((u) => u.id)}::text[], ${updates.map((u) => u.state)}::text[], ${updates.map((u) => u.attemptCount)}::int[],
          ${updates.map((u) => u.lastStatus)}::int[], ${updates.map((u) => u.nextInMs)}::bigint[]
        ) as u (id, state, attempt_count, last_status, next_in_ms)
        where d.id = u.id`;
    },

    /** A later success or failure wins, whichever report comes first. */
    async updateStreaks(updates: readonly StreakUpdate[]): Promise<void> {
      if (updates.length === 0) return;
      await sql`
        update endpoints e set
          failure_count = u.failure_count,
          failing_since = u.failing_since,
          last_success_at = greatest(e.last_success_at, u.last_success_at),
          last_failure_at = greatest(e.last_failure_at, u.last_failure_at),
          enabled = case when u.reason is null then e.enabled else false end,
          disabled_reason = coalesce(u.reason, e.disabled_reason),
          updated_at = case when u.reason is null then e.updated_at else clock_timestamp() end
        from unnest(
          ${updates.map((u) => u.id)}::text[], ${updates.map((u) => u.failureCount)}::int[],
          ${updates.map((u) => u.failingSince?.toISOString() ?? null)}::timestamptz[], ${updates.map((u) => u.disabledReason)}::text[],
          ${updates.map((u) => u.lastSuccessAt?.toISOString() ?? null)}::timestamptz[], ${updates.map((u) => u.lastFailureAt?.toISOString() ?? null)}::timestamptz[]
        ) as u (id, failure_count, failing_since, reason, last_success_at, last_failure_at)
        where e.id = u.id`;
      const disabled = updates.filter((u) => u.disabledReason !== null).map((u) => u.id);
      if (disabled.length > 0) await this.disablePending(disabled);
    },

    async disablePending(endpointIds: readonly string[]): Promise<void> {
      await sql`
        update deliveries set state = 'DISABLED', next_attempt_at = null, updated_at = clock_timestamp()
        where endpoint_id = any(${endpointIds}::text[]) and state = 'PENDING'`;
    },

    async disableAttempt(id: string, attempt: number): Promise<void> {
      await sql`
        update deliveries set state = 'DISABLED', lease_until = null, next_attempt_at = null, updated_at = clock_timestamp()
        where id = ${id} and state = 'DELIVERING' and attempt_count + 1 = ${attempt}`;
    },
  };
}
export type AttemptsRepo = ReturnType<typeof attemptsRepo>;

export function attemptRow(deliveryId: string, attempt: number, attemptedAt: string, r: CallResult): AttemptRow {
  return { deliveryId, attempt, attemptedAt, outcome: r.outcome, status: r.status, errorClass: r.error_class, durationMs: r.duration_ms };
}
