-- The foreign key from order_items to orders checked every item by locking its order's row (a row lock
-- written to the heap and the WAL per item), which took about 30% of the creates PostgreSQL could do:
-- ItemsForeignKeyBenchmark (load-tests) measured 8,922 creates/s with it and 12,630/s without (medians
-- of 3, 2026-11-30). It guarded nothing the code does not: an order and its items are inserted by the
-- same statement (Sql.INSERT_ORDERS), and orders are never deleted. The tests check after each one that
-- no item is without its order.
ALTER TABLE order_items DROP CONSTRAINT IF EXISTS order_items_order_id_fkey;
