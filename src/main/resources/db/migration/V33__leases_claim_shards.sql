-- The shards the lease's holder owns (its partitions of the timer topic; every shard on a node alone), written with
-- each take and renewal of the lease and at once when they change. In a cluster every node's sweep also covers the
-- shards no live lease claims (decision 0050): those of a node that died while the broker was away, which no other
-- node owns until the broker is back. Empty until a node of this version holds the id.
ALTER TABLE node_leases ADD COLUMN shards int[] NOT NULL DEFAULT '{}';
