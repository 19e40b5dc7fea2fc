-- The Kafka relay publishes in feed order, one relay at a time, and keeps how far it got in one row, instead of
-- setting published_at on every event: that update rewrote each outbox row whole with an entry in each of its
-- indexes (1.1 KB of WAL per create), and its two partial indexes took an entry for every event in every profile.
-- An event is published once its position is at most last_position.
CREATE TABLE outbox_relayed (
  one           boolean PRIMARY KEY DEFAULT true CHECK (one),
  last_position bigint NOT NULL
);
-- Where the relay stands now: before its first positioned event not yet published; past every position when all are.
INSERT INTO outbox_relayed (last_position)
SELECT coalesce((SELECT min(position) - 1 FROM outbox WHERE published_at IS NULL AND position IS NOT NULL),
                (SELECT last_position FROM outbox_positions));
DROP INDEX outbox_unpublished;
DROP INDEX outbox_unpublished_by_position;
ALTER TABLE outbox DROP COLUMN published_at;
