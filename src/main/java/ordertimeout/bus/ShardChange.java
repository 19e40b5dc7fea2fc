package ordertimeout.bus;

/** Shards this node was given or lost in a rebalance of the timer consumer group. */
public record ShardChange(int[] shards) {}
