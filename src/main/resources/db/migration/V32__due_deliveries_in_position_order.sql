-- The webhook sender walks each webhook's pending deliveries in position order, from after a cursor, and looks at a
-- bounded number of them a read (decision 0047): before, each read took every due delivery of the node's shards by
-- webhook_deliveries_due and sorted them, so a backlog made every read as long as the backlog. That index has no
-- other reader. CONCURRENTLY: the dispatcher and the senders write deliveries meanwhile; a build that failed halfway
-- leaves an invalid index of that name, dropped first.
DROP INDEX CONCURRENTLY IF EXISTS webhook_deliveries_pending_by_position;
-- position > 0 (every position is): the read's walk says so, and its look for an earlier pending event of the order
-- (position < its own) cannot, so that look never takes this index. A partial index vacuumed while no delivery was
-- pending counts as empty until the next vacuum, whatever it holds; planned so, the look walked this index over every
-- pending delivery of the webhook before the one looked at, not webhook_deliveries_pending_by_order to its order's.
CREATE INDEX CONCURRENTLY webhook_deliveries_pending_by_position ON webhook_deliveries (sink, position)
  WHERE status = 'PENDING' AND position > 0;
DROP INDEX CONCURRENTLY IF EXISTS webhook_deliveries_due;
