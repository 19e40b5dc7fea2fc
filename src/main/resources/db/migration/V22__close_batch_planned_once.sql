-- A close batch closes the due unpaid orders among its ids, gives their stock back, forgets their failed closes and
-- writes their log lines and ORDER_CLOSED events in one statement. Planned on every call (force_custom_plan, decision
-- 0007) it spent 0.69-0.85 ms planning a call (SteadyStateBenchmark at 600 creates/s, 2026-12-04), and 22-32 ms for a
-- storm batch of 4,000 ids. As the pay group's (V21) it finds orders and items by primary key only, so it is planned
-- once per session here, with sequential scans off as in order_view (V13).
-- The statement is Sql.CLOSE_DUE as it was, its parameters named; the event's payload is the order as
-- Sql.eventPayload writes it (PlansMadeOnceTest compares the two). Timeouts compare the deadline, and the hold of a
-- started payment, with the database clock; a parked order is not closed here. Returns the orders closed.
CREATE FUNCTION close_due_orders(close_ids bigint[], reason text)
RETURNS TABLE (id bigint, close_at timestamptz, hold_until timestamptz, closed_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  WITH closed AS (
    UPDATE orders o SET status = 'CLOSED', close_reason = reason, closed_at = clock_timestamp()
    WHERE o.id = ANY(close_ids) AND o.status IS NOT DISTINCT FROM 'UNPAID' AND o.close_at <= now()
      AND (o.hold_until IS NULL OR o.hold_until <= now())
      AND NOT EXISTS (SELECT 1 FROM close_failures f WHERE f.order_id = o.id AND f.parked_at IS NOT NULL)
    RETURNING o.id, o.client, o.user_id, o.category, o.status, o.close_reason, o.created_at, o.close_at, o.remind_at,
              o.hold_until, o.paid_at, o.closed_at),
  items AS (
    SELECT i.order_id, jsonb_agg(jsonb_build_object('sku', i.sku, 'qty', i.qty) ORDER BY i.sku) AS json,
           array_agg(i.sku ORDER BY i.sku) AS skus, array_agg(i.qty ORDER BY i.sku) AS qtys
    FROM order_items i WHERE i.order_id = ANY(close_ids) GROUP BY i.order_id),
  held AS (
    SELECT s.sku, sum(s.qty) AS qty
    FROM closed c JOIN items it ON it.order_id = c.id, unnest(it.skus, it.qtys) AS s (sku, qty)
    GROUP BY s.sku),
  locked AS MATERIALIZED (
    SELECT inv.sku, held.qty FROM inventory AS inv JOIN held ON held.sku = inv.sku
    ORDER BY inv.sku FOR UPDATE OF inv),
  moved AS (
    UPDATE inventory AS inv SET available = inv.available + l.qty, reserved = inv.reserved - l.qty, updated_at = now()
    FROM locked l WHERE inv.sku = l.sku),
  forgotten AS (
    DELETE FROM close_failures f WHERE f.order_id IN (SELECT c.id FROM closed c)),
  logged AS (
    INSERT INTO order_log (order_id, event, detail, at)
    SELECT c.id, 'CLOSED', c.close_reason, c.closed_at FROM closed c),
  evented AS (
    INSERT INTO outbox (order_id, client, type, payload, created_at)
    SELECT o.id, o.client, 'ORDER_CLOSED',
           jsonb_strip_nulls(jsonb_build_object(
             'orderId', o.id::text, 'client', o.client, 'userId', o.user_id, 'category', o.category,
             'status', o.status, 'reason', o.close_reason, 'items', it.json,
             'createdAt', to_char(o.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
             'closeAt', to_char(o.close_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
             'holdUntil', to_char(o.hold_until AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
             'remindAt', to_char(o.remind_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
             'paidAt', to_char(o.paid_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
             'closedAt', to_char(o.closed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))),
           o.closed_at
    FROM closed o LEFT JOIN items it ON it.order_id = o.id)
  SELECT c.id, c.close_at, c.hold_until, c.closed_at FROM closed c;
END $$;
ALTER FUNCTION close_due_orders(bigint[], text) SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION close_due_orders(bigint[], text) SET enable_seqscan = off;
