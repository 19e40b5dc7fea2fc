-- The highest feed position retention deleted, per client ('' for events of no client): a pull-feed reader whose
-- cursor lies below its client's missed events it never read, and the feed answers it 410 cursor_expired instead of
-- going on past the gap in silence (decision 0046). Written by retention's deletes only.
CREATE TABLE outbox_feed_deleted (
  client  text PRIMARY KEY,
  through bigint NOT NULL
);
