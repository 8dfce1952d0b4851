-- Up Migration
-- Open live event streams, so that a credential holds at most a few across every replica. A
-- replica renews its own lease every few seconds; the streams of a replica whose lease ran out
-- (killed without closing them) no longer count, and the sweep removes them.
create table stream_replicas (
  replica    text primary key,
  expires_at timestamptz not null
);
create table event_streams (
  id            text primary key,
  credential_id text not null,
  replica       text not null,
  opened_at     timestamptz not null default now()
);
create index event_streams_credential_idx on event_streams (credential_id);
create index event_streams_replica_idx on event_streams (replica);

-- Opens a stream unless the credential already holds `max` on live replicas. A function, so that
-- the count runs after the credential's lock is taken (a statement's snapshot would predate it).
create function stream_open(p_id text, p_credential text, p_replica text, p_max int, p_lease_seconds int)
returns boolean language plpgsql set search_path from current as $$
declare
  held int;
begin
  perform pg_advisory_xact_lock(hashtextextended('event_streams:' || p_credential, 0));
  insert into stream_replicas (replica, expires_at) values (p_replica, now() + make_interval(secs => p_lease_seconds))
  on conflict (replica) do update set expires_at = excluded.expires_at;
  select count(*) into held
  from event_streams s join stream_replicas r on r.replica = s.replica
  where s.credential_id = p_credential and r.expires_at > now();
  if held >= p_max then
    return false;
  end if;
  insert into event_streams (id, credential_id, replica) values (p_id, p_credential, p_replica);
  return true;
end $$;
