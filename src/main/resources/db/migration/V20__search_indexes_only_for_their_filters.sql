-- The operators' search indexes (V9) hold an order's id, or an item's order id, in a later column. A plan made once
-- per session (decision 0007) on partitions analyzed while empty found an order by id through them: on an empty
-- table every index that holds a column of the condition costs the same, and the plan is kept once the partition
-- fills. The status read then walked the (client, user_id, id) index and the items' (sku, order_id) index of today's
-- partition for each read (StatusReadPlanBenchmark: a median 2.2 ms a read against 0.25 ms by the primary keys).
-- Made partial on their first column, which is never null, they hold the same rows, and a search still uses them:
-- its condition on that column (status = ..., client = ..., sku = ...) is strict, so it implies the predicate. A
-- lookup by id implies nothing about that column, so only the primary keys are left to it.
-- This rebuilds the three indexes on every partition, and holds writes to orders and order_items meanwhile: on a
-- large database, run it in a quiet hour (operations.md).
DROP INDEX orders_by_status_deadline;
CREATE INDEX orders_by_status_deadline ON orders (status, close_at, id) WHERE status IS NOT NULL;
DROP INDEX orders_by_client_user;
CREATE INDEX orders_by_client_user ON orders (client, user_id, id) WHERE client IS NOT NULL;
DROP INDEX order_items_by_sku;
CREATE INDEX order_items_by_sku ON order_items (sku, order_id) WHERE sku IS NOT NULL;
