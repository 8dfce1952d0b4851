import type { AttemptOutcome, AttemptRef, CallResult, DeliveryState, EventType, StartAttempt } from "@tasksvc/contracts";
import type { Sql } from "@tasksvc/db";
import { BODY_COLUMNS, type BodyColumns, deliveryBody } from "./deliveries-repo.js";

/** An attempt claimed for the job stream. */
export interface Claimed {
  delivery_id: string;
  endpoint_id: string;
  attempt: number;
  lease_until: string;
  /** A rate-limited endpoint's: when the attempt may start (its lease runs from then). */
  send_at?: string;
}

/**
 * How a rate-limited endpoint's send times are handed out (DESIGN.md 11): `spacingMs / rate_limit`
 * apart, the first `leadMs` ahead at least, all within `horizonMs`; an endpoint gets more only once
 * its next free time is within `refillMs`.
 */
export interface Pacing {
  /** One second plus the worker's send window: r + 1 starts then span over a second. */
  spacingMs: number;
  leadMs: number;
  horizonMs: number;
  refillMs: number;
}

/** A delivery whose attempt went unreported past its lease (decision 0015). */
export interface Expired {
  id: string;
  /** The attempt that expired (1-based). */
  attempt: number;
  endpointEnabled: boolean;
}

/** What the worker needs to sign and send one attempt, as it stands in the database now. */
export interface AttemptSubject {
  id: string;
  endpointId: string;
  state: DeliveryState;
  attemptCount: number;
  eventId: string;
  /** The text to sign and send, as stored for the event (null: gone with its event, nothing to send). */
  body: string | null;
  /** The event's own time, as the body states it. */
  occurredAt: Date;
  url: string;
  enabled: boolean;
  secretSealed: string;
  previousSecretSealed: string | null;
  previousSecretExpiresAt: Date | null;
  /** The trace of the change, as the fan-out stored it (null when untraced). */
  traceparent: string | null;
  /** The end of the call window open on this attempt when it was asked for (null: none yet). */
  callUntil: Date | null;
  /** Whether this start opened the attempt's call window: only then may it be sent. */
  opened: boolean;
  /** Opened over a window that had passed unreported: the worker that held it never said how its call ended. */
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

/** One attempt's row in `attempts`. */
export interface AttemptRow {
  deliveryId: string;
  attempt: number;
  attemptedAt: string;
  outcome: AttemptOutcome;
  status: number | null;
  errorClass: string | null;
  durationMs: number | null;
}

/** A delivery's state after an attempt (SUCCEEDED, PENDING with a next attempt, FAILED, DISABLED). */
export interface DeliveryUpdate {
  id: string;
  state: Exclude<DeliveryState, "DELIVERING">;
  attemptCount: number;
  lastStatus: number | null;
  /** Milliseconds from now to the next attempt; null unless PENDING. */
  nextInMs: number | null;
}

export interface StreakUpdate {
  id: string;
  failureCount: number;
  failingSince: Date | null;
  /** The latest success and failure among the results (null: none, the stored time stays). */
  lastSuccessAt: Date | null;
  lastFailureAt: Date | null;
  /** Set when this update disables the endpoint. */
  disabledReason: string | null;
}

/** A start's row: the delivery, its endpoint, its body and its call window. */
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

/**
 * The delivery machinery's SQL in schema `webhooks`: the dispatcher's claims and expiries, the
 * worker's start and record. Bound to a pool or to one transaction.
 */
export function attemptsRepo(sql: Sql) {
  return {
    /**
     * Serializes dispatchers (every replica runs one) for the rest of the transaction, so the
     * per-endpoint bound counts what is really in flight. A dispatch transaction is a few ms.
     */
    async lockDispatch(): Promise<void> {
      await sql`select pg_advisory_xact_lock(hashtext('webhooks.dispatch'))`;
    },

    /** DELIVERING rows whose lease ran out, locked for this transaction. */
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
     * Claims due PENDING deliveries of enabled endpoints, at most `perEndpoint` in flight per
     * endpoint (those already DELIVERING count), `limit` in all: they become DELIVERING with a
     * lease. Each endpoint's oldest due first.
     *
     * The endpoints with PENDING rows are found by skipping through deliveries_live_key one
     * endpoint at a time (a loose index scan), then each one's due rows are taken from
     * deliveries_endpoint_due_idx: the cost follows the number of endpoints with pending work,
     * not the number of rows, so a hanging endpoint's backlog costs one probe (migration 0004).
     *
     * An endpoint with a rate limit gets send times instead of "now" (DESIGN.md 11): spaced
     * `pacing.spacingMs / rate_limit` apart from its `rate_next_at` (or `leadMs` from now), only
     * those within `horizonMs`, and `rate_next_at` moves past the last one, in this statement.
     * Its row is locked first (`paced`, id order), before any of its deliveries, as every writer
     * of both does; one locked by a report in progress is skipped (SKIP LOCKED: no slot this
     * pass, never "no limit"), so a pass never waits on a report. Only passes write
     * `rate_next_at`, and they take turns (lockDispatch). Endpoints without a limit take the
     * same path as before: no lock, no send time, the lease from now.
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
      // A send time goes out rounded up to the millisecond: never before the slot it stands for.
      return rows.map((r) => ({
        delivery_id: r.id,
        endpoint_id: r.endpoint_id,
        attempt: r.attempt,
        lease_until: r.lease_until.toISOString(),
        ...(r.send_at_ms === null ? {} : { send_at: new Date(r.send_at_ms).toISOString() }),
      }));
    },

    /**
     * Gives claimed attempts back, due again after `delayMs` (their jobs could not be published,
     * or a worker reached them past their send window): PENDING, the attempt count unchanged.
     * Answers how many were still DELIVERING in that attempt.
     */
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
     * Opens the call window of each attempt that is current (DELIVERING in that very attempt) and
     * has none open (never started, or the last start's window has passed: that worker's call has
     * ended, or it died), for `window_ms` from now, and stretches the lease to cover it, so the
     * dispatcher never counts an attempt while its call may still be going on. A ref without
     * `window_ms` (a worker from before windows) takes the lease as its window. Answers the
     * deliveries (with their endpoint, sealed secrets and body) of these refs, each saying whether this start opened its
     * window (and whether over one that had passed unreported: the row as read is the one before this statement's update);
     * a deleted one is absent. One statement: a row locked by a racing start or expiry is waited for, then judged as it
     * stands (so two starts never both open). Each ref at most once per call (the caller merges repeats).
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

    /**
     * The deliveries of these ids and their endpoints, locked in that order: endpoints, then
     * deliveries. Two statements sent together (one round trip): the second runs after the first
     * has its locks, with a snapshot of its own.
     */
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

    /**
     * Adds attempts; an attempt already recorded keeps its row, except a `no_outcome` placeholder
     * (its lease ran out first), which the late real outcome replaces.
     */
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

    /** Writes streaks and the latest success and failure (a later one wins, whichever report comes first); an update with a reason disables its endpoint and its PENDING deliveries (DESIGN.md 5). */
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

    /** An attempt whose endpoint is disabled now: its delivery stops there, nothing sent. */
    async disableAttempt(id: string, attempt: number): Promise<void> {
      await sql`
        update deliveries set state = 'DISABLED', lease_until = null, next_attempt_at = null, updated_at = clock_timestamp()
        where id = ${id} and state = 'DELIVERING' and attempt_count + 1 = ${attempt}`;
    },
  };
}
export type AttemptsRepo = ReturnType<typeof attemptsRepo>;

/** The attempt row of a reported call. */
export function attemptRow(deliveryId: string, attempt: number, attemptedAt: string, r: CallResult): AttemptRow {
  return { deliveryId, attempt, attemptedAt, outcome: r.outcome, status: r.status, errorClass: r.error_class, durationMs: r.duration_ms };
}
