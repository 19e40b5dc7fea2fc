package ordertimeout.sweep;

import java.util.Arrays;

/**
 * Since when each shard has been found unclaimed (by no live lease, and not owned here) by every look in a row, and
 * which have been so for long enough to be swept (decision 0050). A group that is settling (a cluster's start, a
 * rebalance) leaves shards unclaimed for seconds, a dead node's lease for good: only the second lasts.
 */
final class UnclaimedStreaks {
  private static final long NOT_UNCLAIMED = Long.MIN_VALUE;

  private final long lastingNanos;
  /** Indexed by shard: the time of the first look of the current streak, or {@link #NOT_UNCLAIMED}. */
  private final long[] unclaimedSinceNanos;

  UnclaimedStreaks(int shards, long lastingNanos) {
    this.lastingNanos = lastingNanos;
    this.unclaimedSinceNanos = new long[shards];
    forget();
  }

  /**
   * Records a look made at {@code nowNanos} that found {@code unclaimed}; answers those of them found unclaimed by
   * every look for at least the lasting time, in shard order. A shard missing from a look starts again.
   */
  int[] lookedAndFound(int[] unclaimed, long nowNanos) {
    long[] previous = unclaimedSinceNanos.clone();
    Arrays.fill(unclaimedSinceNanos, NOT_UNCLAIMED);
    for (int shard : unclaimed) {
      unclaimedSinceNanos[shard] = previous[shard] == NOT_UNCLAIMED ? nowNanos : previous[shard];
    }
    return Arrays.stream(unclaimed).sorted()
        .filter(shard -> nowNanos - unclaimedSinceNanos[shard] >= lastingNanos)
        .toArray();
  }

  /** A look that failed says nothing about the shards in between: every streak starts again. */
  void forget() {
    Arrays.fill(unclaimedSinceNanos, NOT_UNCLAIMED);
  }
}
