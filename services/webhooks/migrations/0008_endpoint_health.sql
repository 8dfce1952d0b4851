-- Up Migration
-- Endpoint health and control (decision 0028): when the endpoint last answered a delivery with a
-- 2xx and when an attempt last failed, written with the failure streak under the endpoint's row
-- lock, so concurrent reports from any number of delivery replicas keep them exact.
alter table endpoints add column last_success_at timestamptz;
alter table endpoints add column last_failure_at timestamptz;
-- At most this many delivery attempts start per second (null: no limit). The dispatcher hands out
-- send times at least 1/rate_limit s apart; rate_next_at is the first one still free.
alter table endpoints add column rate_limit integer check (rate_limit between 1 and 10000);
alter table endpoints add column rate_next_at timestamptz;
