-- Up Migration
-- The dispatcher's claim (decision 0015) finds the endpoints with PENDING deliveries by skipping
-- through deliveries_live_key one endpoint at a time, then takes each endpoint's due rows from
-- deliveries_endpoint_due_idx: its cost follows the number of endpoints, not of rows, so one
-- hanging endpoint's backlog of thousands costs one index probe per pass.
--
-- deliveries_due_idx (next_attempt_at) made the planner walk that backlog row by row (it chose
-- it for the per-endpoint picks: 24 ms a pass with a 23,000-row backlog, against 0.6 ms), and
-- deliveries_lease_idx made it count attempts in flight by scanning every DELIVERING row for
-- each endpoint. The expiry sweep (once a second, over the few hundred DELIVERING rows at most)
-- does not need an index of its own.
drop index deliveries_due_idx;
drop index deliveries_lease_idx;
