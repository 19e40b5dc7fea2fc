-- An order's items in the order of their SKUs' bytes (COLLATE "C"), wherever PostgreSQL lists them: the reads, the
-- pay group's answer and every event's payload. They were in the database's collation, while the service sorts a
-- create's items by Java's String order, which is byte order for a SKU (ASCII: the API's Identifier). Under a
-- collation such as en-US the two differ (Java puts "B" before "a" and "A-1" before "a_2", en-US the other way
-- round), so an order answered from the status cache listed its items in another order than the same order read from
-- PostgreSQL or its events. ItemOrderTest runs these on a database whose default collation is ICU's en-US.
-- Only the ORDER BYs change: the columns keep the database's collation, so no index is rebuilt, and a pay's or close's
-- stripes are still locked in one order by every session. CREATE OR REPLACE drops the functions' settings: set again.

-- order_view of V13, its items by byte order.
CREATE OR REPLACE FUNCTION order_view(wanted_id bigint, of_client text)
RETURNS TABLE (id bigint, client text, user_id text, category text, status text, close_reason text,
               created_at timestamptz, close_at timestamptz, remind_at timestamptz, paid_at timestamptz,
               closed_at timestamptz, hold_until timestamptz, skus text[], qtys integer[])
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  SELECT o.id, o.client, o.user_id, o.category, o.status, o.close_reason, o.created_at, o.close_at, o.remind_at,
         o.paid_at, o.closed_at, o.hold_until,
         array_agg(i.sku ORDER BY i.sku COLLATE "C"), array_agg(i.qty ORDER BY i.sku COLLATE "C")
  FROM orders o JOIN order_items i ON i.order_id = o.id
  WHERE o.id = wanted_id AND (of_client IS NULL OR o.client = of_client)
  GROUP BY o.id;
END $$;
ALTER FUNCTION order_view(bigint, text) SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION order_view(bigint, text) SET enable_seqscan = off;

-- create_orders of V19, its items by byte order.
CREATE OR REPLACE FUNCTION create_orders(new_ids bigint[], new_shards int[], new_clients text[], new_user_ids text[],
                              new_categories text[], new_timeout_seconds int[], new_remind_after_seconds int[],
                              item_order_ids bigint[], item_skus text[], item_qtys int[])
RETURNS TABLE (id bigint, created_at timestamptz, close_at timestamptz, remind_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  WITH t AS (SELECT clock_timestamp() AS at),
  input AS (
    SELECT * FROM unnest(new_ids, new_shards, new_clients, new_user_ids, new_categories, new_timeout_seconds,
                         new_remind_after_seconds)
      AS i (id, shard, client, user_id, category, timeout_seconds, remind_after_seconds)),
  items_in AS (
    SELECT * FROM unnest(item_order_ids, item_skus, item_qtys) AS d (order_id, sku, qty)),
  created AS (
    INSERT INTO orders AS o (id, shard, client, user_id, category, status, created_at, close_at, remind_at)
    SELECT i.id, i.shard, i.client, i.user_id, i.category, 'UNPAID', t.at,
           t.at + i.timeout_seconds * interval '1 second', t.at + i.remind_after_seconds * interval '1 second'
    FROM input i CROSS JOIN t
    ON CONFLICT (id) DO NOTHING
    RETURNING o.id, o.client, o.user_id, o.category, o.status, o.created_at, o.close_at, o.remind_at),
  created_items AS (
    SELECT d.order_id, d.sku, d.qty FROM items_in d JOIN created c ON c.id = d.order_id),
  items AS (
    INSERT INTO order_items (order_id, sku, qty) SELECT d.order_id, d.sku, d.qty FROM created_items d),
  reserved AS (
    UPDATE inventory AS inv
    SET available = inv.available - d.qty, reserved = inv.reserved + d.qty, updated_at = now()
    FROM (SELECT c.sku, sum(c.qty) AS qty FROM created_items c GROUP BY c.sku) AS d
    WHERE inv.sku = d.sku),
  logged AS (
    INSERT INTO order_log (order_id, event, detail, at)
    SELECT c.id, 'CREATED', c.category, c.created_at FROM created c),
  evented AS (
    INSERT INTO outbox (order_id, client, type, payload, created_at)
    SELECT c.id, c.client, 'ORDER_CREATED',
           jsonb_strip_nulls(jsonb_build_object(
             'orderId', c.id::text, 'client', c.client, 'userId', c.user_id, 'category', c.category,
             'status', c.status,
             'items', jsonb_agg(jsonb_build_object('sku', d.sku, 'qty', d.qty) ORDER BY d.sku COLLATE "C"),
             'createdAt', to_char(c.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
             'closeAt', to_char(c.close_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
             'remindAt', to_char(c.remind_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))),
           c.created_at
    FROM created c JOIN created_items d ON d.order_id = c.id
    GROUP BY c.id, c.client, c.user_id, c.category, c.status, c.created_at, c.close_at, c.remind_at)
  SELECT c.id, c.created_at, c.close_at, c.remind_at FROM created c;
END $$;
ALTER FUNCTION create_orders(bigint[], int[], text[], text[], text[], int[], int[], bigint[], text[], int[])
  SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION create_orders(bigint[], int[], text[], text[], text[], int[], int[], bigint[], text[], int[])
  SET enable_seqscan = off;

-- pay_orders of V23, its items by byte order.
CREATE OR REPLACE FUNCTION pay_orders(pay_ids bigint[], pay_clients text[])
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
    SELECT i.order_id, jsonb_agg(jsonb_build_object('sku', i.sku, 'qty', i.qty) ORDER BY i.sku COLLATE "C") AS json,
           array_agg(i.sku ORDER BY i.sku COLLATE "C") AS skus, array_agg(i.qty ORDER BY i.sku COLLATE "C") AS qtys
    FROM order_items i WHERE i.order_id = ANY(pay_ids) GROUP BY i.order_id),
  held AS (
    SELECT s.sku, sum(s.qty) AS qty
    FROM paid c JOIN items it ON it.order_id = c.id, unnest(it.skus, it.qtys) AS s (sku, qty)
    GROUP BY s.sku),
  sold AS (
    INSERT INTO inventory_paid AS p (sku, stripe, units)
    SELECT held.sku, pg_backend_pid() % 16, held.qty FROM held ORDER BY held.sku
    ON CONFLICT (sku, stripe) DO UPDATE SET units = p.units + EXCLUDED.units),
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

-- close_due_orders of V24, its items by byte order.
CREATE OR REPLACE FUNCTION close_due_orders(close_ids bigint[], reason text)
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
    SELECT i.order_id, jsonb_agg(jsonb_build_object('sku', i.sku, 'qty', i.qty) ORDER BY i.sku COLLATE "C") AS json,
           array_agg(i.sku ORDER BY i.sku COLLATE "C") AS skus, array_agg(i.qty ORDER BY i.sku COLLATE "C") AS qtys
    FROM order_items i WHERE i.order_id = ANY(close_ids) GROUP BY i.order_id),
  held AS (
    SELECT s.sku, sum(s.qty) AS qty
    FROM closed c JOIN items it ON it.order_id = c.id, unnest(it.skus, it.qtys) AS s (sku, qty)
    GROUP BY s.sku),
  released AS (
    INSERT INTO inventory_released AS r (sku, stripe, units)
    SELECT held.sku, pg_backend_pid() % 16, held.qty FROM held ORDER BY held.sku
    ON CONFLICT (sku, stripe) DO UPDATE SET units = r.units + EXCLUDED.units),
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
