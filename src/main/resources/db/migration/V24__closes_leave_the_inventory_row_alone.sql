-- Closes no longer lock their SKUs' inventory rows (decision 0037), as pays no longer do since V23. A close gives its
-- units back: reserved goes down, available up. The inventory row is what every create of the SKU locks, and a close
-- batch held it from its stock move to its commit: on one hot SKU the close batch was the row's longest holder
-- (8.5-10.4 ms a call at 600 creates/s), and in a deadline storm every batch of 4,000 orders held most SKUs' rows while
-- it wrote its events. Now a close counts the units it gave back in inventory_released, on a stripe of its session
-- (backend pid mod 16, as inventory_paid), and never touches the inventory row. A SKU's available units are its
-- inventory.available plus the units its released stripes count, its reserved units inventory.reserved less what its
-- paid and released stripes count: the view stock gives them. So inventory.available alone may go below zero (creates
-- take from the row what closes gave back to the stripes); the stock's own figure never does, and every statement that
-- takes units checks it.
CREATE TABLE inventory_released (
  sku    text NOT NULL,
  stripe smallint NOT NULL CHECK (stripe BETWEEN 0 AND 15),
  units  bigint NOT NULL,
  PRIMARY KEY (sku, stripe)
);

CREATE FUNCTION units_released(released_sku text) RETURNS bigint
LANGUAGE sql STABLE AS $$ SELECT coalesce(sum(units), 0)::bigint FROM inventory_released WHERE sku = released_sku $$;

ALTER TABLE inventory DROP CONSTRAINT inventory_available_check;

-- The version tells every state of the available units from every other: the row's xmin moves with each write of the
-- row (a create, an admin's change), the released units only grow (each close adds its own).
CREATE OR REPLACE VIEW stock AS
  SELECT inv.sku, inv.available + coalesce(released.units, 0) AS available,
         inv.reserved - coalesce(paid.units, 0) - coalesce(released.units, 0) AS reserved,
         inv.xmin::text || '-' || coalesce(released.units, 0) AS version
  FROM inventory inv
  LEFT JOIN (SELECT sku, sum(units)::bigint AS units FROM inventory_paid GROUP BY sku) paid ON paid.sku = inv.sku
  LEFT JOIN (SELECT sku, sum(units)::bigint AS units FROM inventory_released GROUP BY sku) released
    ON released.sku = inv.sku;

-- close_due_orders of V22, its stock move now the stripe's count. CREATE OR REPLACE drops the function's settings: set
-- again.
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
    SELECT i.order_id, jsonb_agg(jsonb_build_object('sku', i.sku, 'qty', i.qty) ORDER BY i.sku) AS json,
           array_agg(i.sku ORDER BY i.sku) AS skus, array_agg(i.qty ORDER BY i.sku) AS qtys
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
