-- Up Migration
-- An attempt's call window: set when a worker starts the attempt (the signed request it is about
-- to send), to the time by which that worker's call has surely ended (its start deadline plus
-- the call timeout). Until then no other worker may start the same attempt, so a job that comes
-- back to another worker while the first is alive never makes a second call at once; after it, a
-- crashed worker's attempt is started again at once instead of waiting out the lease. Null until
-- the attempt is started; each claim clears it.
alter table deliveries add column call_until timestamptz;
