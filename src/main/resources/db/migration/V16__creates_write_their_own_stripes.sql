-- A client's create groups no longer all run one after another (docs/decisions/0029-client-caps-with-headroom.md):
-- while a client is far from its caps, a group takes the client's advisory lock shared, and one of 16 slot locks of
-- the client exclusive, the slot of its connection (backend pid mod 16). Creates then write a stripe of their slot,
-- 17 + backend pid mod 16, instead of stripe 0, so that two groups of one client do not queue on one row. The slot
-- lock, held since before the insert, keeps every other create of the client off that stripe (a group holding the
-- client's lock exclusive holds off all of them); pays and closes still write 1..16 and reconciliation 0, so creates
-- still never share a row with them, and the lock order of V3 stays free of deadlocks.
ALTER TABLE client_holdings DROP CONSTRAINT client_holdings_stripe_check;
ALTER TABLE client_holdings ADD CONSTRAINT client_holdings_stripe_check CHECK (stripe BETWEEN 0 AND 32);

CREATE OR REPLACE FUNCTION count_created_orders() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO client_holdings AS h (client, stripe, unpaid, units)
  SELECT client, 17 + pg_backend_pid() % 16, count(*), 0 FROM created WHERE status = 'UNPAID' GROUP BY client ORDER BY client
  ON CONFLICT (client, stripe) DO UPDATE SET unpaid = h.unpaid + EXCLUDED.unpaid;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION count_created_items() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO client_holdings AS h (client, stripe, unpaid, units)
  SELECT o.client, 17 + pg_backend_pid() % 16, 0, sum(i.units)
  FROM (SELECT order_id, sum(qty) AS units FROM created_items GROUP BY order_id) i
  CROSS JOIN LATERAL (SELECT client, status FROM orders WHERE id = i.order_id OFFSET 0) o
  WHERE o.status = 'UNPAID' GROUP BY o.client ORDER BY o.client
  ON CONFLICT (client, stripe) DO UPDATE SET units = h.units + EXCLUDED.units;
  RETURN NULL;
END $$;

-- CREATE OR REPLACE drops the functions' settings (V11, V14): set again.
ALTER FUNCTION count_created_orders() SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION count_created_items() SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION count_created_items() SET enable_seqscan = off;
