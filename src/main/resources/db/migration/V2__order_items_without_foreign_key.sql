-- The foreign key from order_items to orders checked every item by locking its order's row (a row lock
-- written to the heap and the WAL per item), which took about a third of the creates PostgreSQL could do
-- (group commits without HTTP, realistic SKU spread, 8 s each: 6,033-8,553/s with it, 10,919-12,774/s
-- without, 2026-11-30). It guarded nothing the code does not: an order and its items are inserted by the
-- same statement (Sql.INSERT_ORDERS), and orders are never deleted. The tests check after each one that
-- no item is without its order.
ALTER TABLE order_items DROP CONSTRAINT IF EXISTS order_items_order_id_fkey;
