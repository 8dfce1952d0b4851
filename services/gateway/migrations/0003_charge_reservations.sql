-- Up Migration
-- Reservations (decision 0007). A replica under load reserves a small batch of calls in one
-- round trip and spends it locally, instead of writing both counter rows on every request. The
-- counters include reserved calls, so the limits can never be exceeded; what a replica does not
-- spend it gives back with charge_release(). The batch is sized here, from the authoritative
-- counts: at most an eighth of what remains, so near a limit every call is counted one by one
-- and the limits stay exact where they are visible.
create function charge_reserve(
  p_credential text, p_burst integer, p_window_seconds integer,
  p_org text, p_anchor timestamptz, p_quota bigint, p_period_seconds integer, p_want integer
) returns table (
  outcome text, granted integer, burst_count integer, window_start timestamptz, window_end timestamptz,
  quota_count bigint, period_start timestamptz, period_end timestamptz
) language plpgsql as $$
#variable_conflict use_column
declare
  v_now timestamptz := now();
  v_window timestamptz := to_timestamp(floor(extract(epoch from v_now) / p_window_seconds) * p_window_seconds);
  v_window_end timestamptz := v_window + make_interval(secs => p_window_seconds);
  v_period timestamptz := p_anchor + make_interval(secs => floor(extract(epoch from (v_now - p_anchor)) / p_period_seconds) * p_period_seconds);
  v_period_end timestamptz := v_period + make_interval(secs => p_period_seconds);
  v_b integer;
  v_q bigint;
  v_n integer;
begin
  -- Counter writes may be lost on a database crash (at most wal_writer_delay): an under-count,
  -- never an over-charge. Other transactions keep synchronous commit (decision 0006).
  perform set_config('synchronous_commit', 'off', true);
  -- Lock order: burst row, then usage row (as charge_release).
  insert into burst_counters (credential_id, window_start, count) values (p_credential, v_window, 0)
  on conflict do nothing;
  select c.count into v_b from burst_counters c
  where c.credential_id = p_credential and c.window_start = v_window for update;
  v_n := least(greatest(p_want, 1), greatest(1, (p_burst - v_b) / 8), p_burst - v_b);
  if v_n <= 0 then
    select u.count into v_q from usage_counters u where u.organization_id = p_org and u.period_start = v_period;
    return query select 'rate_limited'::text, 0, v_b, v_window, v_window_end, coalesce(v_q, 0::bigint), v_period, v_period_end;
    return;
  end if;
  insert into usage_counters (organization_id, period_start, count) values (p_org, v_period, 0)
  on conflict do nothing;
  select u.count into v_q from usage_counters u
  where u.organization_id = p_org and u.period_start = v_period for update;
  v_n := least(v_n::bigint, greatest(1, (p_quota - v_q) / 8), p_quota - v_q)::integer;
  if v_n <= 0 then
    return query select 'quota_exhausted'::text, 0, v_b, v_window, v_window_end, v_q, v_period, v_period_end;
    return;
  end if;
  update burst_counters c set count = c.count + v_n where c.credential_id = p_credential and c.window_start = v_window;
  update usage_counters u set count = u.count + v_n where u.organization_id = p_org and u.period_start = v_period;
  return query select 'ok'::text, v_n, v_b + v_n, v_window, v_window_end, v_q + v_n, v_period, v_period_end;
end $$;

-- Gives back reserved calls a replica did not spend (its reservation expired, or it shut down).
create function charge_release(
  p_credential text, p_window timestamptz, p_org text, p_period timestamptz, p_n integer
) returns void language plpgsql as $$
begin
  perform set_config('synchronous_commit', 'off', true);
  update burst_counters set count = greatest(0, count - p_n) where credential_id = p_credential and window_start = p_window;
  update usage_counters set count = greatest(0, count - p_n) where organization_id = p_org and period_start = p_period;
end $$;

-- Replaced by charge_reserve() (one call is a reservation of one).
drop function charge(text, integer, integer, text, timestamptz, bigint, integer);
