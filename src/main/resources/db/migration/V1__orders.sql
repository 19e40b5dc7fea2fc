-- Settings fixed when the schema is created (the shard count).
CREATE TABLE service_settings (
  name  text PRIMARY KEY,
  value text NOT NULL
);

CREATE TABLE orders (
  id           bigint PRIMARY KEY,
  shard        smallint NOT NULL CHECK (shard >= 0),
  client       text NOT NULL,   -- the API client that created it; other clients do not see it
  user_id      text NOT NULL,
  category     text NOT NULL,
  status       text NOT NULL CHECK (status IN ('UNPAID', 'PAID', 'CLOSED')),
  close_reason text CHECK (close_reason IN ('TIMEOUT', 'USER_CANCELLED', 'ADMIN')),
  created_at   timestamptz NOT NULL,
  close_at     timestamptz NOT NULL,
  remind_at    timestamptz,
  reminded_at  timestamptz,
  paid_at      timestamptz,
  closed_at    timestamptz,
  CHECK ((status = 'CLOSED') = (close_reason IS NOT NULL AND closed_at IS NOT NULL)),
  CHECK ((status = 'PAID') = (paid_at IS NOT NULL))
);
-- The wheel's reload, the sweep and the close CAS all read unpaid orders by shard and deadline.
CREATE INDEX orders_unpaid_by_shard_deadline ON orders (shard, close_at, id) WHERE status = 'UNPAID';
-- The wheel's reload of reminders not sent yet; entries leave it as reminders go out.
CREATE INDEX orders_unsent_reminders_by_shard ON orders (shard, remind_at, id)
  WHERE status = 'UNPAID' AND reminded_at IS NULL AND remind_at IS NOT NULL;
-- The per-user cap on unpaid orders (users are a client's own).
CREATE INDEX orders_unpaid_by_user ON orders (client, user_id) WHERE status = 'UNPAID';

CREATE TABLE order_items (
  order_id bigint NOT NULL REFERENCES orders (id),
  sku      text NOT NULL,
  qty      integer NOT NULL CHECK (qty > 0),
  PRIMARY KEY (order_id, sku)
);

CREATE TABLE inventory (
  sku        text PRIMARY KEY,
  available  bigint NOT NULL CHECK (available >= 0),
  reserved   bigint NOT NULL DEFAULT 0 CHECK (reserved >= 0),
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE idempotency_keys (
  client          text NOT NULL,
  key             text NOT NULL,
  request_hash    text NOT NULL,
  response_status integer NOT NULL,
  response_body   text NOT NULL,
  order_id        bigint,
  created_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (client, key)
);
-- Retention expires keys by age; rows arrive in time order, so BRIN costs almost nothing per insert.
CREATE INDEX idempotency_keys_by_time ON idempotency_keys USING brin (created_at);

-- Event ids come from a sequence: unique across nodes, and appended at the right edge of the index
-- (random UUIDs would scatter every insert of a close storm over the whole index).
CREATE TABLE outbox (
  event_id     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  order_id     bigint NOT NULL,
  type         text NOT NULL CHECK (type IN ('ORDER_CREATED', 'ORDER_PAID', 'ORDER_CLOSED', 'ORDER_CLOSE_REMINDER')),
  payload      jsonb NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  published_at timestamptz
);
CREATE INDEX outbox_unpublished ON outbox (created_at) WHERE published_at IS NULL;
-- Retention deletes published rows by age; no entry until a row is published.
CREATE INDEX outbox_published ON outbox (published_at) WHERE published_at IS NOT NULL;

-- What happened to an order and why; the retention job deletes rows older than retention.orderLogHours (72 by default).
CREATE TABLE order_log (
  id       bigserial PRIMARY KEY,
  order_id bigint NOT NULL,
  event    text NOT NULL CHECK (event IN ('CREATED', 'PAID', 'CLOSED', 'REMINDED')),
  detail   text,
  at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX order_log_by_order ON order_log (order_id);
-- Rows arrive in time order: a BRIN index serves the retention scan at almost no cost per insert.
CREATE INDEX order_log_by_time ON order_log USING brin (at);
