package ordertimeout.bus;

/**
 * Shards this node was given or lost in a rebalance of the timer consumer group, and when it heard of it (its wall
 * clock, before anything was done about it).
 */
public record ShardChange(int[] shards, long heardAtMillis) {}
