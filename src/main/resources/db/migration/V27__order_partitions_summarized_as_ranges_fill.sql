-- The operators' search by creation time (orders_by_created_time, a BRIN index) summarizes each partition's ranges of
-- pages as they fill, as retention's indexes do since V26 (decision 0041). PostgreSQL refuses the setting on the
-- partitioned index itself, but takes it on each partition's index: this function sets it on every one that lacks it,
-- here for the partitions V11 and the job made, and after each run of the partitions job for those it creates ahead.
-- ALTER INDEX ... SET (autosummarize) takes a lock that lets reads and writes of the orders go on.
CREATE FUNCTION summarize_order_partitions_as_ranges_fill() RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  partition_index regclass;
  changed integer := 0;
BEGIN
  FOR partition_index IN
    SELECT h.inhrelid::regclass FROM pg_inherits h JOIN pg_class c ON c.oid = h.inhrelid
    WHERE h.inhparent = 'orders_by_created_time'::regclass
      AND NOT coalesce('autosummarize=on' = ANY (c.reloptions), false)
  LOOP
    EXECUTE format('ALTER INDEX %s SET (autosummarize = on)', partition_index);
    changed := changed + 1;
  END LOOP;
  RETURN changed;
END $$;
COMMENT ON FUNCTION summarize_order_partitions_as_ranges_fill() IS 'Sets autosummarize on each partition''s index of orders_by_created_time that lacks it; returns how many it set';

SELECT summarize_order_partitions_as_ranges_fill();
