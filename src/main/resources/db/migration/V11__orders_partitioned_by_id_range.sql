-- Bounded tables (docs/decisions/0023-orders-partitioned-by-id-range.md): orders and order_items become partitioned by
-- ranges of the order id. Ids are time-ordered (OrderIds: milliseconds since 2025-01-01 in the bits above the low 22),
-- so a range of ids is a range of time, and the partitions maintenance job (PartitionsVerticle) drops a day of
-- finished orders with DETACH and DROP instead of deleting its rows.
--
-- The tables as they are become the first partition (the floor: every id below today's first), without copying a
-- row: renamed with their indexes, the partitioned tables created with the same columns, checks, indexes and
-- triggers, the old tables attached. A CHECK constraint proves the range first, so the attach does not read the
-- table again; each index of the old tables is taken as its partition of the parent's index (same definition), so
-- none is built again. Today and the next three days get their partitions here; the job keeps creating ahead.

-- 1. The old tables and their indexes move aside; their triggers go (the parents' fire for every partition).
DROP TRIGGER orders_created ON orders;
DROP TRIGGER orders_status_changed ON orders;
DROP TRIGGER orders_truncated ON orders;
DROP TRIGGER order_items_created ON order_items;

ALTER TABLE orders RENAME TO orders_p_floor;
ALTER INDEX orders_pkey RENAME TO orders_p_floor_pkey;
ALTER INDEX orders_unpaid_by_shard_deadline RENAME TO orders_p_floor_unpaid_by_shard_deadline;
ALTER INDEX orders_unsent_reminders_by_shard RENAME TO orders_p_floor_unsent_reminders_by_shard;
ALTER INDEX orders_unpaid_by_user RENAME TO orders_p_floor_unpaid_by_user;
ALTER INDEX orders_held_by_shard RENAME TO orders_p_floor_held_by_shard;
ALTER INDEX orders_by_status_deadline RENAME TO orders_p_floor_by_status_deadline;
ALTER INDEX orders_by_client_user RENAME TO orders_p_floor_by_client_user;
ALTER INDEX orders_by_created_time RENAME TO orders_p_floor_by_created_time;

ALTER TABLE order_items RENAME TO order_items_p_floor;
ALTER INDEX order_items_pkey RENAME TO order_items_p_floor_pkey;
ALTER INDEX order_items_by_sku RENAME TO order_items_p_floor_by_sku;

-- 2. The partitioned tables: the same columns, NOT NULLs and checks (LIKE keeps the checks' names, which the attach
-- matches), and every index of V1-V10 under its old name.
CREATE TABLE orders (LIKE orders_p_floor INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE INCLUDING COMMENTS)
  PARTITION BY RANGE (id);
ALTER TABLE orders ADD CONSTRAINT orders_pkey PRIMARY KEY (id);
CREATE INDEX orders_unpaid_by_shard_deadline ON orders (shard, close_at, id) WHERE status = 'UNPAID';
CREATE INDEX orders_unsent_reminders_by_shard ON orders (shard, remind_at, id)
  WHERE status = 'UNPAID' AND reminded_at IS NULL AND remind_at IS NOT NULL;
CREATE INDEX orders_unpaid_by_user ON orders (client, user_id) WHERE status = 'UNPAID';
CREATE INDEX orders_held_by_shard ON orders (shard, hold_until, id) WHERE status = 'UNPAID' AND hold_until IS NOT NULL;
CREATE INDEX orders_by_status_deadline ON orders (status, close_at, id);
CREATE INDEX orders_by_client_user ON orders (client, user_id, id);
CREATE INDEX orders_by_created_time ON orders USING brin (created_at);

CREATE TABLE order_items (LIKE order_items_p_floor INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE INCLUDING COMMENTS)
  PARTITION BY RANGE (order_id);
ALTER TABLE order_items ADD CONSTRAINT order_items_pkey PRIMARY KEY (order_id, sku);
CREATE INDEX order_items_by_sku ON order_items (sku, order_id);

-- 3. The old tables become the floor partitions: ids below today's first (00:00 UTC).
CREATE FUNCTION order_id_at(at timestamptz) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
  SELECT ((floor(extract(epoch FROM at) * 1000))::bigint - 1735689600000) << 22
$$;
COMMENT ON FUNCTION order_id_at(timestamptz) IS 'The first order id of the millisecond of at (OrderIds: 41 bits of milliseconds since 2025-01-01 above 22 bits of node and sequence)';

DO $$
DECLARE
  today timestamptz := date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
  boundary bigint := order_id_at(today);
  day timestamptz;
BEGIN
  EXECUTE format('ALTER TABLE orders_p_floor ADD CONSTRAINT orders_p_floor_range CHECK (id < %s)', boundary);
  EXECUTE format('ALTER TABLE order_items_p_floor ADD CONSTRAINT order_items_p_floor_range CHECK (order_id < %s)', boundary);
  EXECUTE format('ALTER TABLE orders ATTACH PARTITION orders_p_floor FOR VALUES FROM (MINVALUE) TO (%s)', boundary);
  EXECUTE format('ALTER TABLE order_items ATTACH PARTITION order_items_p_floor FOR VALUES FROM (MINVALUE) TO (%s)', boundary);
  ALTER TABLE orders_p_floor DROP CONSTRAINT orders_p_floor_range;
  ALTER TABLE order_items_p_floor DROP CONSTRAINT order_items_p_floor_range;

  FOR i IN 0..3 LOOP
    day := today + make_interval(days => i);
    EXECUTE format('CREATE TABLE %I PARTITION OF orders FOR VALUES FROM (%s) TO (%s)',
      'orders_p' || to_char(day AT TIME ZONE 'UTC', 'YYYYMMDD'), order_id_at(day), order_id_at(day + interval '1 day'));
    EXECUTE format('CREATE TABLE %I PARTITION OF order_items FOR VALUES FROM (%s) TO (%s)',
      'order_items_p' || to_char(day AT TIME ZONE 'UTC', 'YYYYMMDD'), order_id_at(day), order_id_at(day + interval '1 day'));
  END LOOP;

  -- Every index of the old tables must now be a partition of an index of the parents: one missed here (a migration
  -- after V10 that added an index this one does not name) would leave the parents without it.
  IF EXISTS (SELECT 1 FROM pg_index i
             WHERE i.indrelid IN ('orders_p_floor'::regclass, 'order_items_p_floor'::regclass)
               AND NOT EXISTS (SELECT 1 FROM pg_inherits h WHERE h.inhrelid = i.indexrelid)) THEN
    RAISE EXCEPTION 'V11: an index of the old orders or order_items has no index on the partitioned table';
  END IF;
END $$;

-- 4. The triggers of V3 and V10 on the parents: statement-level, with transition tables holding the rows of every
-- partition the statement touched.
CREATE TRIGGER orders_created AFTER INSERT ON orders REFERENCING NEW TABLE AS created
  FOR EACH STATEMENT EXECUTE FUNCTION count_created_orders();
CREATE TRIGGER order_items_created AFTER INSERT ON order_items REFERENCING NEW TABLE AS created_items
  FOR EACH STATEMENT EXECUTE FUNCTION count_created_items();
CREATE TRIGGER orders_status_changed AFTER UPDATE ON orders REFERENCING OLD TABLE AS before_update NEW TABLE AS after_update
  FOR EACH STATEMENT EXECUTE FUNCTION count_status_changes();
CREATE TRIGGER orders_truncated AFTER TRUNCATE ON orders
  FOR EACH STATEMENT EXECUTE FUNCTION forget_client_holdings();

-- The sessions run with plan_cache_mode = force_custom_plan (DatabaseSetup), so each trigger statement would be
-- planned again on every call, over every partition: up to 4 ms a call. Their statements have no parameters, so
-- a plan made once serves every call.
ALTER FUNCTION count_created_orders() SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION count_created_items() SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION count_status_changes() SET plan_cache_mode = force_generic_plan;

-- Partitions the job archives instead of dropping (retention.archive: table) move here, as they are.
CREATE SCHEMA IF NOT EXISTS orders_archive;
