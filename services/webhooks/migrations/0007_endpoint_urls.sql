-- Up Migration
-- One endpoint per URL in an organization, enforced by a unique index (the service compares URLs
-- as it stores them: WHATWG-serialized). An organization may already have several endpoints with
-- one URL; the upgrade must not fail on them, nor silently delete what a customer made. So the
-- endpoint kept is the oldest enabled one (else the oldest); each other one is disabled (an
-- enabled one with disabled_reason `duplicate_url`, its PENDING deliveries DISABLED, as a manual
-- disable does) and marked `duplicate_url`, which keeps it out of the index. Enabling it, or
-- giving it another URL, clears the mark: the index then refuses it while the URL is taken.
alter table endpoints add column duplicate_url boolean not null default false;

with ranked as (
  select id, enabled,
         row_number() over (partition by organization_id, url order by enabled desc, created_at, id) as n
  from endpoints
), marked as (
  update endpoints e set
    duplicate_url = true,
    enabled = false,
    disabled_reason = case when r.enabled then 'duplicate_url' else e.disabled_reason end,
    updated_at = case when r.enabled then clock_timestamp() else e.updated_at end
  from ranked r
  where r.id = e.id and r.n > 1
  returning e.id, r.enabled as was_enabled
)
update deliveries d set state = 'DISABLED', next_attempt_at = null, updated_at = clock_timestamp()
from marked m
where d.endpoint_id = m.id and m.was_enabled and d.state = 'PENDING';

create unique index endpoints_org_url_key on endpoints (organization_id, url) where not duplicate_url;
