-- Up Migration
-- Delivery statistics per endpoint (GET /v1/webhook-endpoints/{id}/stats) that cost the same at a
-- million deliveries as at ten: counts and a latency histogram per creation minute of the
-- deliveries, kept as deltas that a compaction folds into a rollup.
--
-- Triggers write the deltas, not the statements of the delivery machinery: every writer of
-- deliveries and attempts (fan-out, replays, dispatcher, reports, disables, a later migration, an
-- operator's SQL, and a replica still running the previous version during a rolling update) adds
-- its delta inside the statement that makes the change, so a delta exists iff the change
-- committed. Statement-level, with transition tables: one grouped insert per statement, never one
-- per row. Deletes add nothing: the retention sweep deletes only deliveries older than any window
-- the stats answer, and an endpoint's delete takes its statistics along (on delete cascade).

-- Insert-only: a statement that changes what is counted adds one row per (endpoint, creation
-- minute) it touched; no writer ever updates or deletes one, so writers never wait on each other
-- here. The compaction (every few seconds, one replica at a time) moves them into delivery_stats.
create table delivery_stat_deltas (
  endpoint_id     text not null references endpoints (id) on delete cascade,
  -- The creation minute of the deliveries counted (UTC).
  bucket          timestamptz not null,
  created         integer not null default 0,
  succeeded       integer not null default 0,
  failed          integer not null default 0,
  disabled        integer not null default 0,
  attempts        integer not null default 0,
  attempts_failed integer not null default 0,
  -- Timed attempts as (bin, count) pairs, a bin possibly repeated (stats_latency_bin): what a
  -- trigger can write without building a histogram; the compaction builds them.
  latency_bins    integer[],
  latency_counts  integer[]
);
create index delivery_stat_deltas_endpoint_idx on delivery_stat_deltas (endpoint_id, bucket);

-- The rollup: the same sums per endpoint and bucket at three widths (1 minute, 1 hour, 1 day, UTC
-- boundaries), so any window reads at most 59 minutes + 23 hours + 30 days of rows.
create table delivery_stats (
  endpoint_id     text not null references endpoints (id) on delete cascade,
  -- Minutes: 1, 60 or 1440.
  width           integer not null check (width in (1, 60, 1440)),
  bucket          timestamptz not null,
  created         integer not null,
  succeeded       integer not null,
  failed          integer not null,
  disabled        integer not null,
  attempts        integer not null,
  attempts_failed integer not null,
  -- Attempts per duration bin: element i counts bin i - 1 (stats_latency_bin); null when none.
  latency         integer[],
  primary key (endpoint_id, width, bucket)
);
-- The retention sweep's way to the old rows: the compaction adds them in time order.
create index delivery_stats_bucket_brin on delivery_stats using brin (bucket);

-- The bucket of width `width_min` minutes holding t: boundaries counted from a UTC midnight, so
-- they do not move with the session's time zone.
create function stats_bucket(t timestamptz, width_min integer) returns timestamptz
  language sql immutable strict parallel safe
  return date_bin(make_interval(mins => width_min), t, timestamptz '2000-01-01 00:00:00+00');

-- Latency bins of attempt durations: one per millisecond up to 100 ms (exact there), then each 5%
-- wider than the one before (bin k holds 100·1.05^(k-101) < ms ≤ 100·1.05^(k-100)) up to bin 232,
-- which ends past 60 s (the longest call) and also holds anything longer.
-- Not strict, so that the planner inlines it.
create function stats_latency_bin(ms integer) returns integer
  language sql immutable parallel safe
  return case when ms is null then null when ms <= 100 then greatest(ms, 0)
              else least(100 + ceil(ln(ms::float8 / 100) / ln(1.05::float8))::integer, 232) end;

-- The duration a bin stands for: the bin itself up to 100 ms; above, the rounded harmonic mean of
-- the first and last whole milliseconds of the bin (the value with the least relative error to
-- both): within 2.6% of every duration in the bin (2.44% but for the rounding to a millisecond;
-- held by services/webhooks/test/delivery-stats.test.ts).
create function stats_latency_value(bin integer) returns integer
  language sql immutable strict parallel safe
  return case when bin <= 100 then bin
              else (select round(2.0 * a * b / (a + b))::integer
                    from (select floor(100 * 1.05::float8 ^ (bin - 101)) + 1 as a, floor(100 * 1.05::float8 ^ (bin - 100)) as b) x) end;

-- Histograms are integer arrays, element i counting bin i - 1, as long as their last bin in use.
-- The element-wise sum of two (either may be null: none).
create function stats_hist_add(a integer[], b integer[]) returns integer[]
  language sql immutable parallel safe
  return (select array_agg(coalesce(a[i], 0) + coalesce(b[i], 0) order by i)
          from generate_series(1, greatest(cardinality(a), cardinality(b))) i);
-- The sum of many (a check by hand: each width's rows of an endpoint sum to the same).
create aggregate stats_hist_sum(integer[]) (sfunc = stats_hist_add, stype = integer[]);

-- The histogram of (bin, count) pairs, a bin possibly repeated; null when there are none.
create function stats_hist_of(bins integer[], counts integer[]) returns integer[]
  language sql immutable parallel safe
  return (select array_agg(coalesce(c.n, 0) order by i)
          from generate_series(0, (select max(b) from unnest(bins) b)) i
          left join (select b, sum(n)::integer as n from unnest(bins, counts) u (b, n) group by b) c on c.b = i);

-- Deliveries: `created` counts rows, the three final states count rows in them. An update adds
-- each new row version and takes away each old one, so a move into a final state adds 1 there,
-- PENDING ⇄ DELIVERING adds nothing (no row is written: the dispatcher's claims stay delta-free),
-- and any other change stays right too, whatever statement makes it.
create function delivery_stats_on_insert() returns trigger
  language plpgsql set search_path from current as $$
begin
  insert into delivery_stat_deltas (endpoint_id, bucket, created, succeeded, failed, disabled)
  select endpoint_id, stats_bucket(created_at, 1), count(*),
         count(*) filter (where state = 'SUCCEEDED'), count(*) filter (where state = 'FAILED'), count(*) filter (where state = 'DISABLED')
  from new_rows
  group by 1, 2
  order by 1, 2;
  return null;
end $$;

create function delivery_stats_on_update() returns trigger
  language plpgsql set search_path from current as $$
begin
  insert into delivery_stat_deltas (endpoint_id, bucket, created, succeeded, failed, disabled)
  select * from (
    select endpoint_id, stats_bucket(created_at, 1) as bucket, sum(n)::integer as created,
           coalesce(sum(n) filter (where state = 'SUCCEEDED'), 0)::integer as succeeded,
           coalesce(sum(n) filter (where state = 'FAILED'), 0)::integer as failed,
           coalesce(sum(n) filter (where state = 'DISABLED'), 0)::integer as disabled
    from (select endpoint_id, created_at, state, 1 as n from new_rows
          union all
          select endpoint_id, created_at, state, -1 from old_rows) c
    group by 1, 2
  ) d
  where d.created <> 0 or d.succeeded <> 0 or d.failed <> 0 or d.disabled <> 0
  order by 1, 2;
  return null;
end $$;

-- Attempts: counted in their delivery's bucket; `attempts_failed` those whose outcome is not
-- 'delivered', the latency bins those with a duration. A late report that replaces a no_outcome
-- placeholder is an update: 0 attempts, one failure fewer when it is a 2xx, its duration added.
create function attempt_stats_on_insert() returns trigger
  language plpgsql set search_path from current as $$
begin
  insert into delivery_stat_deltas (endpoint_id, bucket, attempts, attempts_failed, latency_bins, latency_counts)
  select d.endpoint_id, stats_bucket(d.created_at, 1), count(*), count(*) filter (where a.outcome <> 'delivered'),
         array_agg(stats_latency_bin(a.duration_ms)) filter (where a.duration_ms is not null),
         array_agg(1) filter (where a.duration_ms is not null)
  from new_rows a join deliveries d on d.id = a.delivery_id
  group by 1, 2
  order by 1, 2;
  return null;
end $$;

create function attempt_stats_on_update() returns trigger
  language plpgsql set search_path from current as $$
begin
  insert into delivery_stat_deltas (endpoint_id, bucket, attempts, attempts_failed, latency_bins, latency_counts)
  select * from (
    select d.endpoint_id, stats_bucket(d.created_at, 1) as bucket, sum(c.n)::integer as attempts,
           coalesce(sum(c.n) filter (where c.outcome <> 'delivered'), 0)::integer as attempts_failed,
           array_agg(stats_latency_bin(c.duration_ms)) filter (where c.duration_ms is not null) as latency_bins,
           array_agg(c.n) filter (where c.duration_ms is not null) as latency_counts
    from (select delivery_id, outcome, duration_ms, 1 as n from new_rows
          union all
          select delivery_id, outcome, duration_ms, -1 from old_rows) c
    join deliveries d on d.id = c.delivery_id
    group by 1, 2
  ) x
  where x.attempts <> 0 or x.attempts_failed <> 0 or x.latency_bins is not null
  order by 1, 2;
  return null;
end $$;

-- What exists now is counted as it is, under a lock that holds writers (a previous version's
-- replicas included) until the triggers are in: nothing is counted twice or missed. Attempts
-- first, as the dispatcher and the reports take them.
lock table attempts, deliveries in share row exclusive mode;

create trigger delivery_stats_insert after insert on deliveries
  referencing new table as new_rows for each statement execute function delivery_stats_on_insert();
create trigger delivery_stats_update after update on deliveries
  referencing old table as old_rows new table as new_rows for each statement execute function delivery_stats_on_update();
create trigger attempt_stats_insert after insert on attempts
  referencing new table as new_rows for each statement execute function attempt_stats_on_insert();
create trigger attempt_stats_update after update on attempts
  referencing old table as old_rows new table as new_rows for each statement execute function attempt_stats_on_update();

insert into delivery_stat_deltas (endpoint_id, bucket, created, succeeded, failed, disabled)
select endpoint_id, stats_bucket(created_at, 1), count(*),
       count(*) filter (where state = 'SUCCEEDED'), count(*) filter (where state = 'FAILED'), count(*) filter (where state = 'DISABLED')
from deliveries
group by 1, 2;

insert into delivery_stat_deltas (endpoint_id, bucket, attempts, attempts_failed, latency_bins, latency_counts)
select d.endpoint_id, stats_bucket(d.created_at, 1), count(*), count(*) filter (where a.outcome <> 'delivered'),
       array_agg(stats_latency_bin(a.duration_ms)) filter (where a.duration_ms is not null),
       array_agg(1) filter (where a.duration_ms is not null)
from attempts a join deliveries d on d.id = a.delivery_id
group by 1, 2;
