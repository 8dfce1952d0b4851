-- Up Migration
-- An organization's own share of scans (set-limits --scans): lists, searches and feed pages it may
-- run at once on each tasks replica. Null means the fair share, a quarter of the replica's
-- connections; an operator raises it for a tenant as they raise its burst or quota.
alter table organizations add column scans integer check (scans > 0);
