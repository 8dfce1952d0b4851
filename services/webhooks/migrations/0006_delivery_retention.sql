-- Up Migration
-- The delivery log keeps 30 days, as the events feed does (decision 0021; EVENT_RETENTION_DAYS):
-- an hourly sweep deletes finished deliveries older than that, their attempts with them (on
-- delete cascade). BRIN: deliveries go in in time order (created_at is clock_timestamp()), so a
-- block range summary finds the old ones at almost no cost to the fan-out's inserts.
create index deliveries_created_brin on deliveries using brin (created_at);
