-- Retention finds the oldest rows by an index in time order (decision 0045): the log lines and the events by their
-- ids, the idempotency keys by this btree of their time. The BRIN indexes of V1 and V8 are dropped: a BRIN range never
-- narrows when its rows are deleted, so once vacuum's freed pages took new rows each range spanned from the oldest
-- time to the newest and matched every pass, which then read the whole table. Nothing else reads them.
-- CONCURRENTLY: creates and events are written meanwhile; Flyway runs these outside a transaction. A build that failed
-- halfway leaves an invalid index of that name: dropped first, so that a run after a repair builds it whole.
DROP INDEX CONCURRENTLY IF EXISTS idempotency_keys_by_created_at;
CREATE INDEX CONCURRENTLY idempotency_keys_by_created_at ON idempotency_keys (created_at);
DROP INDEX CONCURRENTLY IF EXISTS idempotency_keys_by_time;
DROP INDEX CONCURRENTLY IF EXISTS order_log_by_time;
DROP INDEX CONCURRENTLY IF EXISTS outbox_by_age;
