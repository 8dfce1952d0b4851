import { EVENT_RETENTION_DAYS } from "@tasksvc/contracts";
import { deleteInBatches, type Sql } from "@tasksvc/db";

/** An endpoint's figures over the deliveries created since `since`, as the tables give them. */
export interface StatsTotals {
  /** The window's start actually used (the one asked for, or 24 h ago, and never past the retention). */
  since: Date;
  created: number;
  succeeded: number;
  failed: number;
  disabled: number;
  /** DELIVERING now, counted from the rows in flight. */
  delivering: number;
  attempts: number;
  attemptsFailed: number;
  /** Nearest-rank percentiles of the timed attempts' durations, from the histogram; null when none. */
  p50: number | null;
  p99: number | null;
}

interface TotalsRow {
  since: Date;
  created: number;
  succeeded: number;
  failed: number;
  disabled: number;
  delivering: number;
  attempts: number;
  attempts_failed: number;
  p50: number | null;
  p99: number | null;
}

/**
 * The delivery statistics of schema `webhooks` (migration 0009): triggers on deliveries and
 * attempts add delta rows in the statement of each change; the compaction folds them into the
 * rollup `delivery_stats` (per endpoint, at 1 minute, 1 hour and 1 day); reads add both. Bound
 * to a pool or to one transaction.
 */
export function statsRepo(sql: Sql) {
  return {
    /**
     * One statement (one snapshot, so a compaction running meanwhile is seen whole or not at all).
     * The window [since, ∞) is cut at the first minute, hour and day boundaries after `since`:
     * the partial first minute is counted from the rows (deliveries_page_idx, and the attempts of
     * those few deliveries), then whole minutes up to the next hour, whole hours up to the next
     * day and whole days from the rollup, plus every delta not yet compacted; at most 59 + 23 + 30
     * rollup rows, whatever the window and the number of deliveries. Undefined when the endpoint
     * is not the organization's.
     */
    async totals(org: string, endpointId: string, since: string | undefined): Promise<StatsTotals | undefined> {
      const [row] = await sql<TotalsRow[]>`
        with w as (
          select e.id, date_trunc('milliseconds', greatest(
                   coalesce(${since ?? null}::timestamptz, now() - interval '24 hours'),
                   now() - make_interval(days => ${EVENT_RETENTION_DAYS}))) as since
          from endpoints e where e.organization_id = ${org} and e.id = ${endpointId}
        ), b as (
          -- The first boundary of each width at or after since (times are whole microseconds).
          select w.id, w.since,
                 stats_bucket(w.since + interval '1 minute' - interval '1 microsecond', 1) as m0,
                 stats_bucket(w.since + interval '1 hour' - interval '1 microsecond', 60) as h0,
                 stats_bucket(w.since + interval '24 hours' - interval '1 microsecond', 1440) as d0
          from w
        ), rolled as (
          select s.created, s.succeeded, s.failed, s.disabled, s.attempts, s.attempts_failed, s.latency
          from b join delivery_stats s on s.endpoint_id = b.id and s.width = 1 and s.bucket >= b.m0 and s.bucket < b.h0
          union all
          select s.created, s.succeeded, s.failed, s.disabled, s.attempts, s.attempts_failed, s.latency
          from b join delivery_stats s on s.endpoint_id = b.id and s.width = 60 and s.bucket >= b.h0 and s.bucket < b.d0
          union all
          select s.created, s.succeeded, s.failed, s.disabled, s.attempts, s.attempts_failed, s.latency
          from b join delivery_stats s on s.endpoint_id = b.id and s.width = 1440 and s.bucket >= b.d0
          union all
          select x.created, x.succeeded, x.failed, x.disabled, x.attempts, x.attempts_failed, x.latency
          from b join delivery_stat_deltas x on x.endpoint_id = b.id and x.bucket >= b.m0
        ), head as (
          select d.id, d.state from b join deliveries d on d.endpoint_id = b.id and d.created_at >= b.since and d.created_at < b.m0
        ), head_attempts as (
          select a.outcome, a.duration_ms from head join attempts a on a.delivery_id = head.id
        ), counts as (
          select coalesce(sum(created), 0)::int as created, coalesce(sum(succeeded), 0)::int as succeeded,
                 coalesce(sum(failed), 0)::int as failed, coalesce(sum(disabled), 0)::int as disabled,
                 coalesce(sum(attempts), 0)::int as attempts, coalesce(sum(attempts_failed), 0)::int as attempts_failed
          from (
            select created, succeeded, failed, disabled, attempts, attempts_failed from rolled
            union all
            select count(*), count(*) filter (where state = 'SUCCEEDED'), count(*) filter (where state = 'FAILED'),
                   count(*) filter (where state = 'DISABLED'), 0, 0
            from head
            union all
            select 0, 0, 0, 0, count(*), count(*) filter (where outcome <> 'delivered') from head_attempts
          ) c
        ), bins as (
          select bin, sum(n) as n from (
            select u.i::int - 1 as bin, u.n from rolled cross join unnest(rolled.latency) with ordinality u (n, i)
            union all
            select stats_latency_bin(duration_ms), 1 from head_attempts where duration_ms is not null
          ) x
          group by bin
          having sum(n) > 0
        ), ranked as (
          select bin, sum(n) over (order by bin) as upto, sum(n) over () as total from bins
        )
        select b.since, c.*,
          (select count(*)::int from deliveries d where d.endpoint_id = b.id and d.state = 'DELIVERING' and d.created_at >= b.since) as delivering,
          (select stats_latency_value(bin) from ranked where upto >= ceil(total * 0.5) order by bin limit 1) as p50,
          (select stats_latency_value(bin) from ranked where upto >= ceil(total * 0.99) order by bin limit 1) as p99
        from b cross join counts c`;
      return (
        row && {
          since: row.since,
          created: row.created,
          succeeded: row.succeeded,
          failed: row.failed,
          disabled: row.disabled,
          delivering: row.delivering,
          attempts: row.attempts,
          attemptsFailed: row.attempts_failed,
          p50: row.p50,
          p99: row.p99,
        }
      );
    },

    /**
     * Takes the compaction for this transaction, unless another replica has it (then false: that
     * one is moving the same rows).
     */
    async lockCompaction(): Promise<boolean> {
      const [r] = await sql<{ ok: boolean }[]>`select pg_try_advisory_xact_lock(hashtext('webhooks.delivery_stats')) as ok`;
      return r?.ok === true;
    },

    /**
     * The endpoints that have deltas, locked `for key share` (what the rollup's foreign key takes)
     * before any delta or rollup row, skipping one being deleted. An endpoint's delete then waits
     * for the compaction, or the compaction leaves that endpoint out (its deltas go with it): it
     * never holds delta rows the delete's cascade needs while waiting for the endpoint.
     */
    async endpointsWithDeltas(): Promise<string[]> {
      const rows = await sql<{ id: string }[]>`
        select id from endpoints where id in (select endpoint_id from delivery_stat_deltas)
        order by id for key share skip locked`;
      return rows.map((r) => r.id);
    },

    /**
     * Moves at most `batch` deltas of these endpoints into the rollup, in one statement: each
     * delta is added to its minute, hour and day. Answers how many it moved. Run it under
     * lockCompaction: concurrent compactions would not count twice (a delta is deleted once), but
     * their upserts could wait on each other crosswise.
     */
    async compact(endpointIds: readonly string[], batch: number): Promise<number> {
      if (endpointIds.length === 0) return 0;
      const [r] = await sql<{ n: number }[]>`
        with moved as (
          delete from delivery_stat_deltas where ctid = any(array(
            select ctid from delivery_stat_deltas where endpoint_id = any(${endpointIds}::text[]) limit ${batch}))
          returning *
        ), rolled as (
          select m.endpoint_id, w.width, stats_bucket(m.bucket, w.width) as bucket,
                 sum(m.created)::int as created, sum(m.succeeded)::int as succeeded, sum(m.failed)::int as failed,
                 sum(m.disabled)::int as disabled, sum(m.attempts)::int as attempts, sum(m.attempts_failed)::int as attempts_failed,
                 stats_hist_sum(m.latency) as latency
          from moved m cross join (values (1), (60), (1440)) w (width)
          group by 1, 2, 3
        ), merged as (
          insert into delivery_stats (endpoint_id, width, bucket, created, succeeded, failed, disabled, attempts, attempts_failed, latency)
          select * from rolled order by endpoint_id, width, bucket
          on conflict (endpoint_id, width, bucket) do update set
            created = delivery_stats.created + excluded.created,
            succeeded = delivery_stats.succeeded + excluded.succeeded,
            failed = delivery_stats.failed + excluded.failed,
            disabled = delivery_stats.disabled + excluded.disabled,
            attempts = delivery_stats.attempts + excluded.attempts,
            attempts_failed = delivery_stats.attempts_failed + excluded.attempts_failed,
            latency = stats_hist_add(delivery_stats.latency, excluded.latency)
        )
        select count(*)::int as n from moved`;
      return r?.n ?? 0;
    },

    /**
     * The retention: deletes rollup rows that end more than EVENT_RETENTION_DAYS ago, `batch` per
     * statement; no read goes back further (the window is clamped to it). Rows locked by an
     * endpoint's delete are skipped (they go with it), so the sweep never waits on one.
     */
    async sweep(batch = 10_000): Promise<number> {
      return deleteInBatches(batch, async () => {
        const rows = await sql`
          delete from delivery_stats where ctid = any(array(
            select ctid from delivery_stats
            where bucket < now() - make_interval(days => ${EVENT_RETENTION_DAYS})
              and bucket + make_interval(mins => width) <= now() - make_interval(days => ${EVENT_RETENTION_DAYS})
            limit ${batch} for update skip locked))
          returning 1`;
        return rows.length;
      });
    },
  };
}
export type StatsRepo = ReturnType<typeof statsRepo>;
