package ordertimeout.delivery;

import ordertimeout.store.EventStore;

import java.util.concurrent.TimeUnit;

/**
 * Where a node's next read of one webhook's due deliveries starts walking its pending ones: after {@link #after()}, a
 * feed position (decision 0047). A read looks at {@link EventStore#LOOK_AT_MOST} of them at most; when so many did
 * not fill the webhook's room (in backoff, of other nodes' shards, waiting for their order), the next read goes on
 * after them, and once a walk meets the end it starts again at the head for those it passed. Otherwise the cursor
 * moves up to the first pending delivery met: the index entries of those delivered before it stay until a vacuum,
 * and every read from the head would walk them.
 */
final class DueCursor {
  /**
   * How often at most a walk that met the end starts again at the head though it passed no pending delivery: an
   * admin's retry makes a failed delivery pending again at its old position, which may lie behind the cursor.
   */
  static final long BACK_TO_HEAD_NANOS = TimeUnit.SECONDS.toNanos(1);

  private long after;
  /** Pending deliveries may lie at or before {@link #after}: a walk went on past some. */
  private boolean passedPending;
  private long atHeadNanos;
  /** The highest position a walk met: when one after it meets nothing, no delivery up to it is pending. */
  private long seen;

  DueCursor(long nowNanos) {
    atHeadNanos = nowNanos;
  }

  long after() {
    return after;
  }

  void walked(EventStore.Walk walk, int room, long nowNanos) {
    seen = Math.max(seen, Math.max(walk.first(), walk.last()));
    boolean roomLeft = walk.taken() < room;
    if (roomLeft && walk.last() > 0) {
      after = walk.last();
      passedPending = true;
    } else if (roomLeft && (passedPending || nowNanos - atHeadNanos >= BACK_TO_HEAD_NANOS)) {
      after = 0;
      passedPending = false;
      atHeadNanos = nowNanos;
    } else {
      after = Math.max(after, walk.first() > 0 ? walk.first() - 1 : seen);
    }
  }
}
