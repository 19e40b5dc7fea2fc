-- The holdings' triggers that look rows up in a partitioned table keep one plan per session (V11, V12): the status
-- trigger each order's items, the items' trigger each item's order. A plan made while a partition was nearly empty
-- reads that partition whole for every lookup once it fills, until the next ANALYZE of that partition makes the
-- session plan again (autovacuum's, a minute or more after it starts filling): a 4,000-order close on such a session
-- took 10.8 s against 12 ms. As for the status read (V13), sequential scans are off in these functions; the
-- transition tables they read are not tables and are not affected.
ALTER FUNCTION count_status_changes() SET enable_seqscan = off;
ALTER FUNCTION count_created_items() SET enable_seqscan = off;
