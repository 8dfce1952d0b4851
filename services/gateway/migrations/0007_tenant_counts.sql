-- Up Migration
-- Limits that keep tenants apart (DESIGN.md section 20): open streams per organization, and
-- batches charged one call per item against both limits.

-- The organization of each open stream, so that one organization holds at most a few across every
-- replica whatever its number of credentials. Streams opened by an older release have none and
-- count only against their credential until they close.
alter table event_streams add column organization_id text;
create index event_streams_organization_idx on event_streams (organization_id);

-- Opens a stream unless its credential already holds `p_max`, or its organization `p_org_max`, on
-- live replicas: 'ok', 'credential' or 'organization'. The organization's lock serializes every
-- open of its streams (a credential belongs to one organization); the credential's lock is taken
-- too, so that a replica still on stream_open() (the credential's lock only) is serialized with it.
create function stream_open_in_org(
  p_id text, p_credential text, p_org text, p_replica text, p_max int, p_org_max int, p_lease_seconds int
) returns text language plpgsql set search_path from current as $$
declare
  held int;
begin
  perform pg_advisory_xact_lock(hashtextextended('event_streams_org:' || p_org, 0));
  perform pg_advisory_xact_lock(hashtextextended('event_streams:' || p_credential, 0));
  insert into stream_replicas (replica, expires_at) values (p_replica, now() + make_interval(secs => p_lease_seconds))
  on conflict (replica) do update set expires_at = excluded.expires_at;
  select count(*) into held
  from event_streams s join stream_replicas r on r.replica = s.replica
  where s.credential_id = p_credential and r.expires_at > now();
  if held >= p_max then
    return 'credential';
  end if;
  select count(*) into held
  from event_streams s join stream_replicas r on r.replica = s.replica
  where s.organization_id = p_org and r.expires_at > now();
  if held >= p_org_max then
    return 'organization';
  end if;
  insert into event_streams (id, credential_id, organization_id, replica) values (p_id, p_credential, p_org, p_replica);
  return 'ok';
end $$;

-- Counts exactly `p_n` more calls against the credential's burst window and the organization's
-- billing period, all or none (a batch's items): 'rate_limited' when the window has fewer left,
-- else 'quota_exhausted' when the period has, and then nothing is counted. Windows, periods and
-- the lock order are charge_reserve()'s.
create function charge_exact(
  p_credential text, p_burst integer, p_window_seconds integer,
  p_org text, p_anchor timestamptz, p_quota bigint, p_period_seconds integer, p_n integer
) returns table (
  outcome text, burst_count integer, window_start timestamptz, window_end timestamptz,
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
begin
  perform set_config('synchronous_commit', 'off', true);
  insert into burst_counters (credential_id, window_start, count) values (p_credential, v_window, 0)
  on conflict do nothing;
  select c.count into v_b from burst_counters c
  where c.credential_id = p_credential and c.window_start = v_window for update;
  insert into usage_counters (organization_id, period_start, count) values (p_org, v_period, 0)
  on conflict do nothing;
  select u.count into v_q from usage_counters u
  where u.organization_id = p_org and u.period_start = v_period for update;
  if v_b + p_n > p_burst then
    return query select 'rate_limited'::text, v_b, v_window, v_window_end, v_q, v_period, v_period_end;
    return;
  end if;
  if v_q + p_n > p_quota then
    return query select 'quota_exhausted'::text, v_b, v_window, v_window_end, v_q, v_period, v_period_end;
    return;
  end if;
  update burst_counters c set count = c.count + p_n where c.credential_id = p_credential and c.window_start = v_window;
  update usage_counters u set count = u.count + p_n where u.organization_id = p_org and u.period_start = v_period;
  return query select 'ok'::text, v_b + p_n, v_window, v_window_end, v_q + p_n, v_period, v_period_end;
end $$;
