-- Up Migration
-- Burst limit: fixed windows per credential. Unlogged (no WAL): a crash forgets at most one
-- window of counts, which only ever errs on the side of the caller.
create unlogged table burst_counters (
  credential_id text not null,
  window_start  timestamptz not null,
  count         integer not null,
  primary key (credential_id, window_start)
);

-- Billing-period allowance: consecutive 30-day periods from the organization's creation.
create table usage_counters (
  organization_id text not null,
  period_start    timestamptz not null,
  count           bigint not null,
  primary key (organization_id, period_start)
);

-- Idempotency-Key records (spec 8). status is null while the first execution runs; locked_until
-- bounds how long a gateway that died mid-request can block the key.
create table idempotency_keys (
  credential_id    text not null,
  key              text not null,
  fingerprint      text not null,
  status           integer,
  response_body    text,
  response_headers jsonb,
  locked_until     timestamptz,
  created_at       timestamptz not null default now(),
  primary key (credential_id, key)
);
create index idempotency_keys_created_idx on idempotency_keys (created_at);

-- Process-wide secrets shared by every replica (the cursor signing key), made on first start.
create table secrets (
  name       text primary key,
  value      text not null,
  created_at timestamptz not null default now()
);

-- One round trip per request: count the call against the burst window, then the billing period.
-- A refused call is counted in neither (each upsert only increments below its limit, and a
-- quota refusal gives back the burst slot). Windows are computed from the database clock so that
-- replicas with skewed clocks agree.
create function charge(
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
