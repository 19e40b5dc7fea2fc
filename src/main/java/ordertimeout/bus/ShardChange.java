package ordertimeout.bus;

/**
 * Shards this node was given in a rebalance of the timer consumer group, the number of that gain
 * ({@code OwnedShards.add}, which the load of them names), and when it heard of it (its wall clock, before anything
 * was done about it).
 */
public record ShardChange(int[] shards, long gain, long heardAtMillis) {}
