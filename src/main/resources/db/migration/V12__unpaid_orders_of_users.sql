-- A create group counts its users' unpaid orders (the per-user cap, OrderCreates) while it holds its users' and its
-- client's locks. As a statement of its own it was planned again on every call (the sessions run with
-- plan_cache_mode = force_custom_plan), over every partition of orders: 0.8-1.1 ms of planning a call against
-- 0.1-1.5 ms of execution (IntakeBenchmark's statement print). Here the plan is made once per session. The join is
-- pinned to a lookup per user and partition in orders_unpaid_by_user, the plan that is right whatever the number of
-- users or orders: a plan made once must not keep a scan chosen while the tables were small.
CREATE FUNCTION unpaid_orders_of_users(clients text[], user_ids text[])
  RETURNS TABLE (client text, user_id text, unpaid bigint)
  LANGUAGE plpgsql STABLE
  SET plan_cache_mode = force_generic_plan
  SET enable_seqscan = off
  SET enable_hashjoin = off
  SET enable_mergejoin = off
AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  SELECT o.client, o.user_id, count(*)
  FROM unnest(clients, user_ids) AS u (client, user_id)
  JOIN orders o ON o.client = u.client AND o.user_id = u.user_id
  WHERE o.status = 'UNPAID'
  GROUP BY o.client, o.user_id;
END $$;
