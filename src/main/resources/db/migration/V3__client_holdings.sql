-- What each API client holds: its unpaid orders and the units (sum of qty) of their items, for the per-client
-- caps (clients.*.maxUnpaidOrders, maxReservedUnits). A create reads its client's rows instead of counting its
-- orders. Kept by statement-level triggers, so every statement that creates, pays or closes orders (a close batch
-- of thousands of rows, a seed by SQL) updates each client once, in the same transaction.
--
-- A client's counts are the sums over its stripes; the stripes of pays and closes go negative. Creates add to
-- stripe 0, under the client's advisory lock (OrderCreates), so no other create holds that row then. Pays and
-- closes subtract from the stripe of their connection (1 + backend pid mod 16), so concurrent close batches of one
-- client seldom wait for each other, and never for a create: a create writes its stripe while it holds inventory
-- rows, a close writes its stripe before it locks inventory rows; as they never share a stripe, they cannot
-- deadlock. Reconciliation's repair writes stripe 0 and waits for nothing after it.
CREATE TABLE client_holdings (
  client text NOT NULL,
  stripe smallint NOT NULL CHECK (stripe BETWEEN 0 AND 16),
  unpaid bigint NOT NULL,
  units  bigint NOT NULL,
  PRIMARY KEY (client, stripe)
);

-- Each trigger adds to its clients' rows in client order, so that two transactions lock them in the same order.
CREATE FUNCTION count_created_orders() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO client_holdings AS h (client, stripe, unpaid, units)
  SELECT client, 0, count(*), 0 FROM created WHERE status = 'UNPAID' GROUP BY client ORDER BY client
  ON CONFLICT (client, stripe) DO UPDATE SET unpaid = h.unpaid + EXCLUDED.unpaid;
  RETURN NULL;
END $$;

-- Items are inserted with their order (the same statement) or after it, never before.
CREATE FUNCTION count_created_items() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO client_holdings AS h (client, stripe, unpaid, units)
  SELECT o.client, 0, 0, sum(i.qty) FROM created_items i JOIN orders o ON o.id = i.order_id
  WHERE o.status = 'UNPAID' GROUP BY o.client ORDER BY o.client
  ON CONFLICT (client, stripe) DO UPDATE SET units = h.units + EXCLUDED.units;
  RETURN NULL;
END $$;

-- An order that leaves UNPAID (paid, closed) gives back its count and its units; one that comes back (by hand), or
-- moves to another client, moves them too.
CREATE FUNCTION count_status_changes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO client_holdings AS h (client, stripe, unpaid, units)
  SELECT side.client, 1 + pg_backend_pid() % 16, sum(side.sign), sum(side.sign * u.units)
  FROM before_update o JOIN after_update n ON n.id = o.id
  CROSS JOIN LATERAL (VALUES (o.client, o.status, -1), (n.client, n.status, 1)) AS side (client, status, sign)
  CROSS JOIN LATERAL (SELECT coalesce(sum(qty), 0) AS units FROM order_items WHERE order_id = n.id) u
  WHERE side.status = 'UNPAID' AND (o.status <> n.status OR o.client <> n.client)
  GROUP BY side.client ORDER BY side.client
  ON CONFLICT (client, stripe) DO UPDATE SET unpaid = h.unpaid + EXCLUDED.unpaid, units = h.units + EXCLUDED.units;
  RETURN NULL;
END $$;

CREATE FUNCTION forget_client_holdings() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM client_holdings;
  RETURN NULL;
END $$;

CREATE TRIGGER orders_created AFTER INSERT ON orders REFERENCING NEW TABLE AS created
  FOR EACH STATEMENT EXECUTE FUNCTION count_created_orders();
CREATE TRIGGER order_items_created AFTER INSERT ON order_items REFERENCING NEW TABLE AS created_items
  FOR EACH STATEMENT EXECUTE FUNCTION count_created_items();
CREATE TRIGGER orders_status_changed AFTER UPDATE ON orders REFERENCING OLD TABLE AS before_update NEW TABLE AS after_update
  FOR EACH STATEMENT EXECUTE FUNCTION count_status_changes();
CREATE TRIGGER orders_truncated AFTER TRUNCATE ON orders
  FOR EACH STATEMENT EXECUTE FUNCTION forget_client_holdings();

-- The holdings of the orders already there.
INSERT INTO client_holdings (client, stripe, unpaid, units)
SELECT o.client, 0, count(DISTINCT o.id), coalesce(sum(i.qty), 0)
FROM orders o LEFT JOIN order_items i ON i.order_id = o.id
WHERE o.status = 'UNPAID'
GROUP BY o.client;
