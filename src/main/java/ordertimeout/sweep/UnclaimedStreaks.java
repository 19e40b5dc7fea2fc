package ordertimeout.sweep;

import java.util.Arrays;

/**
 * Since when each shard has been found unclaimed (by no live lease, and not owned here) by every look in a row, and
 * which have been so for long enough to be swept (decision 0050). A group that is settling (a cluster's start, a
 * rebalance) leaves shards unclaimed for seconds, a dead node's lease for good: only the second lasts. A look that
 * failed is not recorded: it says nothing new, as a look skipped. Kept in memory only: a node that restarts begins
 * every streak again.
 */
final class UnclaimedStreaks {
  private static final long NOT_UNCLAIMED = Long.MIN_VALUE;

  private final long lastingNanos;
  /** Indexed by shard: when the first look of the current streak was answered, or {@link #NOT_UNCLAIMED}. */
  private final long[] unclaimedSinceNanos;

  UnclaimedStreaks(int shards, long lastingNanos) {
    this.lastingNanos = lastingNanos;
    this.unclaimedSinceNanos = new long[shards];
    Arrays.fill(unclaimedSinceNanos, NOT_UNCLAIMED);
  }

  /**
   * Records a look sent at {@code sentNanos}, answered at {@code answeredNanos}, that found {@code unclaimed}; answers
   * those of them found unclaimed by every look for at least the lasting time, in shard order. A shard missing from a
   * look starts again. Both ends are the cautious ones: a look may wait long for a connection or a lock, and the shard
   * may have been claimed until its query ran, so a streak begins when its first look was answered; and it lasts
   * until the latest look was sent.
   */
  int[] lookedAndFound(int[] unclaimed, long sentNanos, long answeredNanos) {
    long[] previous = unclaimedSinceNanos.clone();
    Arrays.fill(unclaimedSinceNanos, NOT_UNCLAIMED);
    for (int shard : unclaimed) {
      unclaimedSinceNanos[shard] = previous[shard] == NOT_UNCLAIMED ? answeredNanos : previous[shard];
    }
    return Arrays.stream(unclaimed).sorted()
        .filter(shard -> sentNanos - unclaimedSinceNanos[shard] >= lastingNanos)
        .toArray();
  }
}
