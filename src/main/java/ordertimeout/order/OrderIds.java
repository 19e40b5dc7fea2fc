package ordertimeout.order;

import ordertimeout.clock.WallClock;

import java.util.function.LongSupplier;

/**
 * Time-ordered 64-bit order ids: 41 bits of milliseconds since 2025-01-01, 10 bits of node id,
 * 12 bits of sequence within the millisecond. Thread-safe; one generator per node.
 */
public final class OrderIds {
  private static final long EPOCH_MILLIS = 1_735_689_600_000L; // 2025-01-01T00:00:00Z
  private static final int NODE_BITS = 10;
  /** The low bits: an order's place among those created in the same millisecond on its node. */
  public static final int SEQUENCE_BITS = 12;
  private static final long SEQUENCE_MASK = (1L << SEQUENCE_BITS) - 1;

  private final long nodeBits;
  private final LongSupplier clock;
  private long lastMillis = -1;
  private long sequence;

  public OrderIds(int nodeId, WallClock clock) {
    this(nodeId, clock::millis);
  }

  /** {@code clock} answers the wall-clock time in milliseconds; a test holds it still or turns it back. */
  OrderIds(int nodeId, LongSupplier clock) {
    if (nodeId < 0 || nodeId >= (1 << NODE_BITS)) {
      throw new IllegalArgumentException("node id must be in [0, 1023]: " + nodeId);
    }
    this.nodeBits = (long) nodeId << SEQUENCE_BITS;
    this.clock = clock;
  }

  /** Every id from now on is of a millisecond after {@code millis} (the high-water mark a previous holder of the node id stored). */
  public synchronized void startAfter(long millis) {
    if (millis >= lastMillis) {
      lastMillis = millis;
      sequence = SEQUENCE_MASK; // the next id in this millisecond borrows the next one
    }
  }

  /** The millisecond of the last id (or the one {@link #startAfter} set); -1 before either. */
  public synchronized long lastMillis() {
    return lastMillis;
  }

  public synchronized long next() {
    long now = Math.max(clock.getAsLong(), lastMillis); // never step back with the wall clock
    if (now == lastMillis) {
      sequence = (sequence + 1) & SEQUENCE_MASK;
      if (sequence == 0) {
        now = lastMillis + 1; // 4096 ids in this millisecond: borrow the next one
      }
    } else {
      sequence = 0;
    }
    lastMillis = now;
    return ((now - EPOCH_MILLIS) << (NODE_BITS + SEQUENCE_BITS)) | nodeBits | sequence;
  }

  /** The first id of the millisecond {@code epochMillis} (wall clock since 1970): ids below it are of earlier times. */
  public static long firstIdAt(long epochMillis) {
    return (epochMillis - EPOCH_MILLIS) << (NODE_BITS + SEQUENCE_BITS);
  }

  /** The millisecond (since 1970) an id was minted in. */
  public static long millisOf(long id) {
    return (id >> (NODE_BITS + SEQUENCE_BITS)) + EPOCH_MILLIS;
  }

  /** The shard of an order: a mix of all its id bits, so consecutive ids spread over all shards. */
  public static int shardOf(long id, int shards) {
    long h = id;
    h ^= h >>> 33;
    h *= 0xff51afd7ed558ccdL;
    h ^= h >>> 33;
    h *= 0xc4ceb9fe1a85ec53L;
    h ^= h >>> 33;
    return (int) Long.remainderUnsigned(h, shards);
  }
}
