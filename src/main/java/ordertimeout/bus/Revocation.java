package ordertimeout.bus;

/**
 * Shards this node no longer owns. {@code lost}: the consumer group gave them to other nodes before this one heard (its
 * membership had expired: the node could not reach the broker, or was paused, for a session timeout), so their new
 * owners may have loaded them while this node still took new orders on them. {@code held}: the timers this node's wheel
 * held for them, one timer each (the other kind {@link Deadlines#NONE}), when they were lost; empty otherwise. The
 * timer also sends one, lost, at the group's first assignment, with the timers it kept before for shards others own.
 */
public record Revocation(int[] shards, boolean lost, Deadlines held) {}
