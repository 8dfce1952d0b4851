-- Up Migration
-- Every request updates its credential's burst row and its organization's usage row, so a busy
-- credential's calls queue on those row locks; with synchronous commit each holder also waits
-- for a WAL flush before releasing. Counter updates may be lost on a *database* crash (at most
-- wal_writer_delay, 200 ms by default: an under-count, never an over-charge), so this one
-- transaction commits asynchronously. set_config(…, true) lasts to the end of the statement's
-- transaction, i.e. through its commit; other writes keep synchronous commit.
create or replace function charge(
  p_credential text, p_burst integer, p_window_seconds integer,
  p_org text, p_anchor timestamptz, p_quota bigint, p_period_seconds integer
) returns table (
  outcome text, burst_count integer, window_end timestamptz,
  quota_count bigint, period_start timestamptz, period_end timestamptz
) language plpgsql as $$
#variable_conflict use_column
declare
  v_now timestamptz := now();
  v_window timestamptz := to_timestamp(floor(extract(epoch from v_now) / p_window_seconds) * p_window_seconds);
  v_period timestamptz := p_anchor + make_interval(secs => floor(extract(epoch from (v_now - p_anchor)) / p_period_seconds) * p_period_seconds);
  v_b integer;
  v_q bigint;
begin
  perform set_config('synchronous_commit', 'off', true);
  insert into burst_counters as c (credential_id, window_start, count) values (p_credential, v_window, 1)
  on conflict (credential_id, window_start) do update set count = c.count + 1 where c.count < p_burst
  returning c.count into v_b;
  if v_b is null then
    select u.count into v_q from usage_counters u where u.organization_id = p_org and u.period_start = v_period;
    return query select 'rate_limited'::text, p_burst, v_window + make_interval(secs => p_window_seconds),
      coalesce(v_q, 0::bigint), v_period, v_period + make_interval(secs => p_period_seconds);
    return;
  end if;
  insert into usage_counters as u (organization_id, period_start, count) values (p_org, v_period, 1)
  on conflict (organization_id, period_start) do update set count = u.count + 1 where u.count < p_quota
  returning u.count into v_q;
  if v_q is null then
    update burst_counters c set count = c.count - 1 where c.credential_id = p_credential and c.window_start = v_window;
    return query select 'quota_exhausted'::text, v_b - 1, v_window + make_interval(secs => p_window_seconds),
      p_quota, v_period, v_period + make_interval(secs => p_period_seconds);
    return;
  end if;
  return query select 'ok'::text, v_b, v_window + make_interval(secs => p_window_seconds),
    v_q, v_period, v_period + make_interval(secs => p_period_seconds);
end $$;
