-- Events out without Kafka: the pull feed's order and the webhooks' delivery state (docs/decisions/0019-event-feed-order.md).

-- The client whose order an event is about: the feed shows a client its own events only.
ALTER TABLE outbox ADD COLUMN client text;
UPDATE outbox o SET client = orders.client FROM orders WHERE orders.id = o.order_id;
-- The feed position: commit order, given after commit by one dispatcher at a time (under an advisory lock), so a
-- reader's cursor never passes an event that commits later. Null until the dispatcher has seen the event.
ALTER TABLE outbox ADD COLUMN position bigint;
CREATE UNIQUE INDEX outbox_by_position ON outbox (position) WHERE position IS NOT NULL;
CREATE INDEX outbox_by_client_position ON outbox (client, position) WHERE position IS NOT NULL;
CREATE INDEX outbox_unpositioned ON outbox (event_id) WHERE position IS NULL;
-- The Kafka relay publishes in feed order (it relays positioned events only).
CREATE INDEX outbox_unpublished_by_position ON outbox (position) WHERE published_at IS NULL AND position IS NOT NULL;
-- Retention by age, whatever was delivered; rows arrive in time order, so BRIN costs almost nothing per insert.
CREATE INDEX outbox_by_age ON outbox USING brin (created_at);
-- Retention no longer reads events by when they were published.
DROP INDEX outbox_published;

-- The last position given; one row. Not max(position): retention may have deleted every event, and a cursor must
-- never go back.
CREATE TABLE outbox_positions (
  one           boolean PRIMARY KEY DEFAULT true CHECK (one),
  last_position bigint NOT NULL
);
INSERT INTO outbox_positions (last_position) VALUES (0);

-- One row per event and webhook that wants it; deleted with its event.
CREATE TABLE webhook_deliveries (
  id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  event_id         bigint NOT NULL REFERENCES outbox (event_id) ON DELETE CASCADE,
  position         bigint NOT NULL,
  order_id         bigint NOT NULL,
  shard            smallint NOT NULL,   -- its order's: the owner of the shard sends it
  sink             text NOT NULL,       -- the webhook's url
  status           text NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'DELIVERED', 'FAILED')),
  attempts         integer NOT NULL DEFAULT 0,
  first_attempt_at timestamptz,
  next_attempt_at  timestamptz NOT NULL DEFAULT now(),
  last_error       text,
  delivered_at     timestamptz,
  UNIQUE (event_id, sink)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (shard, next_attempt_at) WHERE status = 'PENDING';
-- A later event of an order waits while an earlier one to the same sink is pending.
CREATE INDEX webhook_deliveries_pending_by_order ON webhook_deliveries (sink, order_id, position) WHERE status = 'PENDING';
CREATE INDEX webhook_deliveries_by_status ON webhook_deliveries (status, id);
