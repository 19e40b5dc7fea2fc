-- A create group counts the unpaid orders of each of its users (the per-user cap). Planned on every call over the
-- orders' partitions, which its users' keys cannot prune, the count took 2.7-3.7 ms a call and 1.1-1.3 ms planning in
-- SteadyStateBenchmark at 600 creates/s (decision 0007). Here it is planned once per session: each user's count is a
-- subquery the planner cannot turn into a join, so the plan has one shape whatever the partitions held when it was
-- made (the join of decision 0007's first try put an empty partition's whole index first, and read it all on every
-- call once it filled). Sequential scans are off in it, as in order_view (V13), for a partition that was empty at
-- planning time.
CREATE FUNCTION unpaid_of_users(clients text[], user_ids text[])
RETURNS TABLE (client text, user_id text, unpaid bigint)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  SELECT u.client, u.user_id,
         (SELECT count(*) FROM orders o WHERE o.client = u.client AND o.user_id = u.user_id AND o.status = 'UNPAID')
  FROM unnest(clients, user_ids) AS u (client, user_id);
END $$;
ALTER FUNCTION unpaid_of_users(text[], text[]) SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION unpaid_of_users(text[], text[]) SET enable_seqscan = off;
