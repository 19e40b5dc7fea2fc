-- A create group inserts its orders, their items, log lines, ORDER_CREATED events and stock reservations in one
-- statement. Planned on every call (force_custom_plan, decision 0007) it spent 0.6-0.7 ms planning a call beside
-- 2.1-2.7 ms running (SteadyStateBenchmark at 400 creates/s, 2026-12-04). Nothing in it has a choice of index on the
-- partitioned tables: rows are inserted, routed to their partitions when it runs, and the id's conflict is checked on
-- the primary key. Its one lookup is the inventory's row of each SKU, by primary key. So it is planned once per
-- session here.
-- Sequential scans are off in it, as in order_view (V13): a plan made while the inventory held a few SKUs would
-- otherwise read the whole inventory for every group once the shop has loaded its catalogue.
-- An order whose id is taken already inserts nothing at all (no items, no reservation) and is missing from the rows
-- returned. The clock is read here, after the group's locks were granted, so that lock waits do not eat into the time
-- to pay. The event's payload is the order as Sql.eventPayload writes it, without the fields a new order has not
-- reached (PlansMadeOnceTest compares the two).
CREATE FUNCTION create_orders(new_ids bigint[], new_shards int[], new_clients text[], new_user_ids text[],
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
             'status', c.status, 'items', jsonb_agg(jsonb_build_object('sku', d.sku, 'qty', d.qty) ORDER BY d.sku),
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
