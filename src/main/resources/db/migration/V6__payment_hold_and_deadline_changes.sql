-- Payments at the edge of the deadline, and deadline changes (POST /v1/orders/{id}/payment-started, /extend, late pays).
-- New columns without defaults: adding them rewrites nothing.
ALTER TABLE orders
  ADD COLUMN hold_until      timestamptz,  -- set once by payment-started: the close waits for it (the close CAS checks it)
  ADD COLUMN late_payment_at timestamptz,  -- a pay came after the close: ORDER_LATE_PAYMENT written (once per order)
  ADD COLUMN reopened_at     timestamptz;  -- a pay after a timeout close paid it again (orders.reopenOnLatePayment)

-- The wheel's reload of held closes: few rows (payments under way), so the index stays tiny.
CREATE INDEX orders_held_by_shard ON orders (shard, hold_until, id) WHERE status = 'UNPAID' AND hold_until IS NOT NULL;

-- Widened checks: NOT VALID then VALIDATE, which reads the table without blocking writes (existing rows pass anyway).
ALTER TABLE outbox DROP CONSTRAINT outbox_type_check;
ALTER TABLE outbox ADD CONSTRAINT outbox_type_check CHECK (type IN ('ORDER_CREATED', 'ORDER_PAID', 'ORDER_CLOSED',
  'ORDER_CLOSE_REMINDER', 'ORDER_DEADLINE_EXTENDED', 'ORDER_LATE_PAYMENT')) NOT VALID;
ALTER TABLE outbox VALIDATE CONSTRAINT outbox_type_check;

ALTER TABLE order_log DROP CONSTRAINT order_log_event_check;
ALTER TABLE order_log ADD CONSTRAINT order_log_event_check CHECK (event IN ('CREATED', 'PAID', 'CLOSED', 'REMINDED',
  'PAYMENT_STARTED', 'EXTENDED', 'LATE_PAYMENT')) NOT VALID;
ALTER TABLE order_log VALIDATE CONSTRAINT order_log_event_check;
