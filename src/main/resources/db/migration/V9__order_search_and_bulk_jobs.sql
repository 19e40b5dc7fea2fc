-- Operators' search (GET /v1/admin/orders, GET /v1/orders): each common filter is answered from an index, pages
-- newest first by id (keyset). Each index costs the creates a little (docs/decisions/0019-order-search-and-bulk-jobs.md).
-- Status with a deadline range (dueAfter/dueBefore), e.g. the unpaid orders due in the next hour.
CREATE INDEX orders_by_status_deadline ON orders (status, close_at, id);
-- A client's orders, and one user's: in id order for the keyset pages.
CREATE INDEX orders_by_client_user ON orders (client, user_id, id);
-- Rows arrive in time order: BRIN serves createdAfter/createdBefore at almost no cost per insert.
CREATE INDEX orders_by_created_time ON orders USING brin (created_at);
-- The orders holding a SKU.
CREATE INDEX order_items_by_sku ON order_items (sku, order_id);

-- Bulk-extend writes ORDER_DEADLINE_EXTENDED; the other event types of the design are allowed here too, so that
-- this list is the whole set whichever migration adds their writers.
ALTER TABLE outbox DROP CONSTRAINT IF EXISTS outbox_type_check;
ALTER TABLE outbox ADD CONSTRAINT outbox_type_check CHECK (type IN ('ORDER_CREATED', 'ORDER_PAID', 'ORDER_CLOSED',
  'ORDER_CLOSE_REMINDER', 'ORDER_DEADLINE_EXTENDED', 'ORDER_LATE_PAYMENT'));

-- Bulk actions of operators (POST /v1/admin/orders/bulk-close, bulk-extend), run in batches by whichever node holds
-- the job's lease; every batch commits its orders' changes and the job's progress together, so a job resumed after a
-- node stopped goes on exactly where the last committed batch ended.
CREATE TABLE bulk_jobs (
  id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  kind           text NOT NULL CHECK (kind IN ('BULK_CLOSE', 'BULK_EXTEND')),
  status         text NOT NULL CHECK (status IN ('QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED')),
  client         text NOT NULL,            -- the admin client that asked for it
  ids            bigint[],                 -- the orders named by id, sorted, each once; null for a filter
  filter         jsonb,                    -- the filter (the search's fields); null for ids
  upper_id       bigint,                   -- a filter covers the orders up to this id (the newest at submission)
  extend_seconds integer,
  total          bigint NOT NULL,          -- the orders matched at submission
  done           bigint NOT NULL DEFAULT 0, -- orders processed: changed + skipped
  changed        bigint NOT NULL DEFAULT 0, -- closed, or extended
  skipped        bigint NOT NULL DEFAULT 0, -- no longer UNPAID (or, for extend, due already) when their batch came
  failed         bigint NOT NULL DEFAULT 0, -- orders left unprocessed by a job that failed
  last_id        bigint NOT NULL DEFAULT -1, -- the batches went up to this order id
  owner          text,                     -- the node instance holding the lease
  lease_until    timestamptz,
  attempts       integer NOT NULL DEFAULT 0, -- claims so far: a job claimed bulkJobs.maxAttempts times without finishing fails
  error          text,
  created_at     timestamptz NOT NULL DEFAULT now(),
  started_at     timestamptz,
  updated_at     timestamptz NOT NULL DEFAULT now(),
  finished_at    timestamptz,
  CHECK ((ids IS NULL) <> (filter IS NULL))
);
-- The jobs a node may claim: few at any time.
CREATE INDEX bulk_jobs_unfinished ON bulk_jobs (id) WHERE status IN ('QUEUED', 'RUNNING');
