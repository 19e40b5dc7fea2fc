-- Feed positions in a narrow table of their own (docs/decisions/0039-feed-positions-apart.md). Setting
-- outbox.position rewrote each wide outbox row whole, with an entry in each of its indexes: 1.4 KB of WAL an event.
-- A row here is the event's id, its position and its client (the feed of one client reads by client and position).
CREATE TABLE outbox_feed (
  event_id bigint PRIMARY KEY,
  position bigint NOT NULL UNIQUE,
  client   text
);
CREATE INDEX outbox_feed_by_client ON outbox_feed (client, position);

-- No dispatcher of the version before may position an event between the copy below and the column's end: it would
-- leave the queue without a position. Its nodes' dispatch, relay, feed and retention fail on the missing column until
-- they are replaced; the nodes of this version give every event its position, so nothing is lost.
LOCK TABLE outbox IN ACCESS EXCLUSIVE MODE;
INSERT INTO outbox_feed (event_id, position, client) SELECT event_id, position, client FROM outbox WHERE position IS NOT NULL;

-- Every event written waits for its position in the queue: none has one in the outbox any more.
CREATE OR REPLACE FUNCTION outbox_pending_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO outbox_pending (event_id) SELECT event_id FROM added;
  RETURN NULL;
END $$;

ALTER TABLE outbox DROP COLUMN position;
