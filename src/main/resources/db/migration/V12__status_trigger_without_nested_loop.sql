-- count_status_changes keeps one plan per session (V11: planned again on every call, its statement cost 4.35 ms of
-- planning over the partitions), and that plan is made on the session's first call, for the size of that call's
-- transition tables. A session whose first status change was a single pay or a close of a few orders joined the before
-- and after tables of every later 4,000-order close batch by a nested loop, as if they held a few rows: 709 ms against
-- 100-111 ms on a session whose first call was that batch (StatusTriggerPlanTest's probe, 2026-12-02), growing with
-- the square of the batch; in a close storm with live traffic the drain halved. Without nested loops the join of the
-- two tables is a hash or merge join at every size; the lookups that can only be nested loops (each order's items, the
-- two sides of each row) stay so.
ALTER FUNCTION count_status_changes() SET enable_nestloop = off;
