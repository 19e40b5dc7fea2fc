-- A pay group pays the orders free to pay among its ids, sells their stock and writes their log lines and ORDER_PAID
-- events in one statement. Planned on every call (force_custom_plan, decision 0007) it spent 0.7-0.8 ms planning
-- beside 1.3-2.0 ms running (EXPLAIN ANALYZE under SteadyStateBenchmark at 400 creates/s, 2026-12-04). Planned once, it
-- could take an index that holds the id in a later column, until the status was written IS NOT DISTINCT FROM and the
-- search indexes became partial (V20): now each lookup by id has the primary keys only. So it is planned once per
-- session here. Sequential scans are off in it, as in order_view (V13): a partition or an inventory small when the
-- plan was made would otherwise be read whole on every call once it fills.
-- The statement is Sql.PAY_ORDERS as it was, its parameters named; the event's payload is the order as
-- Sql.eventPayload writes it (PlansMadeOnceTest compares the two). Only rows no other transaction holds are paid
-- (SKIP LOCKED); an id given twice is paid once; the rows returned are the orders paid, their items as arrays.
CREATE FUNCTION pay_orders(pay_ids bigint[], pay_clients text[])
RETURNS TABLE (id bigint, client text, user_id text, category text, status text, close_reason text,
               created_at timestamptz, close_at timestamptz, remind_at timestamptz, paid_at timestamptz,
               closed_at timestamptz, hold_until timestamptz, skus text[], qtys integer[])
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  WITH payable AS (
    SELECT o.id
    FROM orders o JOIN unnest(pay_ids, pay_clients) AS requested (id, client)
      ON o.id = requested.id AND (requested.client IS NULL OR o.client = requested.client)
    WHERE o.id = ANY(pay_ids) AND o.status IS NOT DISTINCT FROM 'UNPAID'
      AND (o.close_at > now() OR o.hold_until > now())
    FOR UPDATE OF o SKIP LOCKED),
  paid AS (
    UPDATE orders o SET status = 'PAID', paid_at = now()
    FROM (SELECT DISTINCT p.id FROM payable p) AS p
    WHERE o.id = p.id AND o.id = ANY(pay_ids) AND o.status IS NOT DISTINCT FROM 'UNPAID'
    RETURNING o.id, o.client, o.user_id, o.category, o.status, o.close_reason, o.created_at, o.close_at, o.remind_at,
              o.hold_until, o.paid_at, o.closed_at),
  items AS (
    SELECT i.order_id, jsonb_agg(jsonb_build_object('sku', i.sku, 'qty', i.qty) ORDER BY i.sku) AS json,
           array_agg(i.sku ORDER BY i.sku) AS skus, array_agg(i.qty ORDER BY i.sku) AS qtys
    FROM order_items i WHERE i.order_id = ANY(pay_ids) GROUP BY i.order_id),
  held AS (
    SELECT s.sku, sum(s.qty) AS qty
    FROM paid c JOIN items it ON it.order_id = c.id, unnest(it.skus, it.qtys) AS s (sku, qty)
    GROUP BY s.sku),
  locked AS MATERIALIZED (
    SELECT inv.sku, held.qty FROM inventory AS inv JOIN held ON held.sku = inv.sku
    ORDER BY inv.sku FOR UPDATE OF inv),
  moved AS (
    UPDATE inventory AS inv SET reserved = inv.reserved - l.qty, updated_at = now()
    FROM locked l WHERE inv.sku = l.sku),
  logged AS (
    INSERT INTO order_log (order_id, event, at) SELECT p.id, 'PAID', p.paid_at FROM paid p),
  evented AS (
    INSERT INTO outbox (order_id, client, type, payload, created_at)
    SELECT o.id, o.client, 'ORDER_PAID',
           jsonb_strip_nulls(jsonb_build_object(
             'orderId', o.id::text, 'client', o.client, 'userId', o.user_id, 'category', o.category,
             'status', o.status, 'reason', o.close_reason, 'items', it.json,
             'createdAt', to_char(o.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
             'closeAt', to_char(o.close_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
             'holdUntil', to_char(o.hold_until AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
             'remindAt', to_char(o.remind_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
             'paidAt', to_char(o.paid_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
             'closedAt', to_char(o.closed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))),
           o.paid_at
    FROM paid o LEFT JOIN items it ON it.order_id = o.id)
  SELECT o.id, o.client, o.user_id, o.category, o.status, o.close_reason, o.created_at, o.close_at, o.remind_at,
         o.paid_at, o.closed_at, o.hold_until, it.skus, it.qtys
  FROM paid o JOIN items it ON it.order_id = o.id;
END $$;
ALTER FUNCTION pay_orders(bigint[], text[]) SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION pay_orders(bigint[], text[]) SET enable_seqscan = off;
