import { EVENT_RETENTION_DAYS } from "@tasksvc/contracts";
import { deleteInBatches, type Sql } from "@tasksvc/db";

export interface StatsTotals {
  /** Clamped to 24 h ago by default and never past the retention. */
  since: Date;
  created: number;
  succeeded: number;
  failed: number;
  disabled: number;
  delivering: number;
  attempts: number;
  attemptsFailed: number;
  /** Nearest-rank percentiles from the histogram; null when none. */
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

/** Triggers add delta rows in each change's statement; compaction folds them into the rollup; reads add both (decision 0028). */
export function statsRepo(sql: Sql) {
  return {
    /**
     * The second statement sums in one snapshot (a compaction is seen whole or not at all), at most
     * 59 + 23 + 30 rollup rows whatever the window. Its boundaries come as values, so the planner sees
     * a one-minute range and reads the rows by index.
     */
    async totals(org: string, endpointId: string, since: string | undefined): Promise<StatsTotals | undefined> {
      const [w] = await sql<{ since: Date; m0: Date; h0: Date; d0: Date }[]>`
        select w.since,
               stats_bucket(w.since + interval '1 minute' - interval '1 microsecond', 1) as m0,
               stats_bucket(w.since + interval '1 hour' - interval '1 microsecond', 60) as h0,
               stats_bucket(w.since + interval '24 hours' - interval '1 microsecond', 1440) as d0
        from endpoints e
        cross join lateral (
          select date_trunc('milliseconds', greatest(coalesce(${since ?? null}::timestamptz, now() - interval '24 hours'),
                                                     now() - make_interval(days => ${EVENT_RETENTION_DAYS}))) as since
        ) w
        where e.organization_id = ${org} and e.id = ${endpointId}`;
      if (!w) return undefined;
      const [row] = await sql<Omit<TotalsRow, "since">[]>`
        with rolled as (
          select created, succeeded, failed, disabled, attempts, attempts_failed, latency from delivery_stats
          where endpoint_id = ${endpointId} and width = 1 and bucket >= ${w.m0} and bucket < ${w.h0}
          union all
          select created, succeeded, failed, disabled, attempts, attempts_failed, latency from delivery_stats
          where endpoint_id = ${endpointId} and width = 60 and bucket >= ${w.h0} and bucket < ${w.d0}
          union all
          select created, succeeded, failed, disabled, attempts, attempts_failed, latency from delivery_stats
          where endpoint_id = ${endpointId} and width = 1440 and bucket >= ${w.d0}
        ), deltas as (
          select created, succeeded, failed, disabled, attempts, attempts_failed, latency_bins, latency_counts from delivery_stat_deltas
          where endpoint_id = ${endpointId} and bucket >= ${w.m0}
        ), head as (
          -- The aggregate keeps the attempts a per-delivery lookup (it cannot become a join).
          select d.state, t.attempts, t.failed, t.bins
          from deliveries d
          cross join lateral (
            select count(*) as attempts, count(*) filter (where a.outcome <> 'delivered') as failed,
                   array_agg(stats_latency_bin(a.duration_ms)) filter (where a.duration_ms is not null) as bins
            from attempts a where a.delivery_id = d.id
          ) t
          where d.endpoint_id = ${endpointId} and d.created_at >= ${w.since} and d.created_at < ${w.m0}
        ), counts as (
          select coalesce(sum(created), 0)::int as created, coalesce(sum(succeeded), 0)::int as succeeded,
                 coalesce(sum(failed), 0)::int as failed, coalesce(sum(disabled), 0)::int as disabled,
                 coalesce(sum(attempts), 0)::int as attempts, coalesce(sum(attempts_failed), 0)::int as attempts_failed
          from (
            select created, succeeded, failed, disabled, attempts, attempts_failed from rolled
            union all
            select created, succeeded, failed, disabled, attempts, attempts_failed from deltas
            union all
            select count(*), count(*) filter (where state = 'SUCCEEDED'), count(*) filter (where state = 'FAILED'),
                   count(*) filter (where state = 'DISABLED'), sum(attempts), sum(failed)
            from head
          ) c
        ), bins as (
          select bin, sum(n) as n from (
            select u.i::int - 1 as bin, u.n from rolled cross join unnest(rolled.latency) with ordinality u (n, i)
            union all
            select u.bin, u.n from deltas cross join unnest(deltas.latency_bins, deltas.latency_counts) u (bin, n)
            union all
            select b.bin, 1 from head cross join unnest(head.bins) b (bin)
          ) x
          group by bin
          having sum(n) > 0
        ), ranked as (
          select bin, sum(n) over (order by bin) as upto, sum(n) over () as total from bins
        )
        select c.*,
          (select count(*)::int from deliveries d where d.endpoint_id = ${endpointId} and d.state = 'DELIVERING' and d.created_at >= ${w.since}) as delivering,
          (select stats_latency_value(bin) from ranked where upto >= ceil(total * 0.5) order by bin limit 1) as p50,
          (select stats_latency_value(bin) from ranked where upto >= ceil(total * 0.99) order by bin limit 1) as p99
        from counts c`;
      if (!row) throw new Error("the stats statement answered no row");
      return {
        since: w.since,
        created: row.created,
        succeeded: row.succeeded,
        failed: row.failed,
        disabled: row.disabled,
        delivering: row.delivering,
        attempts: row.attempts,
        attemptsFailed: row.attempts_failed,
        p50: row.p50,
        p99: row.p99,
      };
    },

    /** Named by the schema: advisory locks are per database, and another schema's compaction moves other rows. */
    async lockCompaction(): Promise<boolean> {
      const [r] = await sql<{ ok: boolean }[]>`select pg_try_advisory_xact_lock(hashtext(current_schema() || '.delivery_stats')) as ok`;
      return r?.ok === true;
    },

    /**
     * Locked `for key share` before any delta or rollup row, skipping one being deleted, so it never
     * holds delta rows an endpoint delete's cascade needs while waiting for the endpoint.
     */
    async endpointsWithDeltas(): Promise<string[]> {
      const rows = await sql<{ id: string }[]>`
        select id from endpoints where id in (select endpoint_id from delivery_stat_deltas)
        order by id for key share skip locked`;
      return rows.map((r) => r.id);
    },

    /** Under lockCompaction: concurrent compactions would not count twice, but their upserts could wait on each other crosswise. */
    async compact(endpointIds: readonly string[], batch: number): Promise<number> {
      if (endpointIds.length === 0) return 0;
      const [r] = await sql<{ n: number }[]>`
        with moved as (
          delete from delivery_stat_deltas where ctid = any(array(
            select ctid from delivery_stat_deltas where endpoint_id = any(${endpointIds}::text[]) limit ${batch}))
          returning *
        ), widths (width) as (
          values (1), (60), (1440)
        ), counts as (
          select m.endpoint_id, w.width, stats_bucket(m.bucket, w.width) as at,
                 sum(m.created)::int as created, sum(m.succeeded)::int as succeeded, sum(m.failed)::int as failed,
                 sum(m.disabled)::int as disabled, sum(m.attempts)::int as attempts, sum(m.attempts_failed)::int as attempts_failed
          from moved m cross join widths w
          group by 1, 2, 3
        ), minute_bins as (
          -- Each (minute, bin) once before it is counted into its hour and day too.
          select m.endpoint_id, m.bucket, u.bin, sum(u.n)::int as n
          from moved m cross join unnest(m.latency_bins, m.latency_counts) u (bin, n)
          group by 1, 2, 3
        ), hists as (
          select b.endpoint_id, w.width, stats_bucket(b.bucket, w.width) as at, stats_hist_of(array_agg(b.bin), array_agg(b.n)) as latency
          from minute_bins b cross join widths w
          group by 1, 2, 3
        ), rolled as (
          select c.endpoint_id, c.width, c.at, c.created, c.succeeded, c.failed, c.disabled, c.attempts, c.attempts_failed, h.latency
          from counts c left join hists h using (endpoint_id, width, at)
        ), merged as (
          insert into delivery_stats (endpoint_id, width, bucket, created, succeeded, failed, disabled, attempts, attempts_failed, latency)
          select * from rolled order by endpoint_id, width, at
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

    /** Rows locked by an endpoint's delete are skipped (they go with it), so the sweep never waits on one. */
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
