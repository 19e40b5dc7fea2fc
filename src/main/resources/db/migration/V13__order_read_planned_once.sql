-- The status read (GET /v1/orders/{id}, a buyer's countdown page polling its order) is one row by primary key and its
-- items. Planned on every call (force_custom_plan, decision 0007) over the partitions, it spent 0.37 ms planning for
-- 0.07 ms running (pg_stat_statements, SteadyStateBenchmark with 50 reads per order). Its shape leaves one plan, so it
-- is planned once per session here. Sequential scans are off in it: a partition that was empty when a session made
-- the plan would otherwise be scanned whole on every read once it fills (decision 0007's per-user count).
CREATE FUNCTION order_view(wanted_id bigint, of_client text)
RETURNS TABLE (id bigint, client text, user_id text, category text, status text, close_reason text,
               created_at timestamptz, close_at timestamptz, remind_at timestamptz, paid_at timestamptz,
               closed_at timestamptz, hold_until timestamptz, skus text[], qtys integer[])
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  SELECT o.id, o.client, o.user_id, o.category, o.status, o.close_reason, o.created_at, o.close_at, o.remind_at,
         o.paid_at, o.closed_at, o.hold_until,
         array_agg(i.sku ORDER BY i.sku), array_agg(i.qty ORDER BY i.sku)
  FROM orders o JOIN order_items i ON i.order_id = o.id
  WHERE o.id = wanted_id AND (of_client IS NULL OR o.client = of_client)
  GROUP BY o.id;
END $$;
ALTER FUNCTION order_view(bigint, text) SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION order_view(bigint, text) SET enable_seqscan = off;
