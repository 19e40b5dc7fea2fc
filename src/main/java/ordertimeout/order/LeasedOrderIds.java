package ordertimeout.order;

import ordertimeout.clock.WallClock;
import ordertimeout.order.OrderRejected.Reason;

import java.util.function.IntPredicate;
import java.util.function.LongSupplier;

/**
 * This node's order ids, minted only while it holds the lease on its node id and below the high-water mark stored
 * with that lease, so that no other node can mint the same ids and a restarted node starts past every id minted
 * before. The lease's validity runs on the monotonic clock from the moment its renewal was sent, so it ends here
 * before it ends in the database. Thread-safe.
 */
public final class LeasedOrderIds {
  /** Ids {@link #nextOnShards} tries: a node owning a share 1/n of the shards finds one in about n. */
  static final int SHARD_TRIES = 64;

  private final OrderIds ids;
  private final LongSupplier wallMillis;
  private final LongSupplier nanoClock;
  private boolean held;
  private long heldUntilNanos;
  private long highWaterMillis;
  private boolean databaseUnreachable;
  /** When an attempt last could not reach the database; meaningless until {@link #everUnreachable}. */
  private long unreachableAtNanos;
  private boolean everUnreachable;

  public LeasedOrderIds(int nodeId, WallClock clock) {
    this(new OrderIds(nodeId, clock), clock::millis, System::nanoTime);
  }

  LeasedOrderIds(OrderIds ids, LongSupplier wallMillis, LongSupplier nanoClock) {
    this.ids = ids;
    this.wallMillis = wallMillis;
    this.nanoClock = nanoClock;
  }

  /**
   * A new id; {@link OrderRejected} while the lease is not held: {@link Reason#DATABASE_UNAVAILABLE} when its
   * renewals could not reach the database, {@link Reason#ORDER_ID_UNAVAILABLE} otherwise.
   */
  public synchronized long next() {
    if (!held || lapsed(heldUntilNanos)) {
      if (databaseUnreachable) {
        throw new OrderRejected(Reason.DATABASE_UNAVAILABLE,
            "the database cannot be reached to renew this node's lease on its node id; nothing was changed, retry later");
      }
      throw new OrderRejected(Reason.ORDER_ID_UNAVAILABLE,
          "this node does not hold the lease on its node id (the database unreachable, or the id taken by another node); retry");
    }
    if (Math.max(wallMillis.getAsLong(), ids.lastMillis()) >= highWaterMillis) {
      throw new OrderRejected(Reason.ORDER_ID_UNAVAILABLE,
          "this node's clock passed the high-water mark of its ids until the next renewal of its lease; retry");
    }
    return ids.next();
  }

  /**
   * A new id, as {@link #next}, of a shard that {@code owns} accepts: in a cluster, the shards this node owns, so that
   * the order's timers stay in its own wheel rather than travel through Kafka to another node's (decision 0034). The
   * ids passed over are never used. After {@value #SHARD_TRIES} tries (a node that owns no shard, or very few of
   * them) the last id, whatever its shard.
   */
  public synchronized long nextOnShards(IntPredicate owns, int shards) {
    long id = next();
    for (int tried = 1; tried < SHARD_TRIES && !owns.test(OrderIds.shardOf(id, shards)); tried++) {
      id = next();
    }
    return id;
  }

  /** The high-water mark to store with a renewal sent now: past every id this node can mint until that lease ends. */
  public synchronized long highWaterFor(long leaseMillis) {
    return Math.max(wallMillis.getAsLong(), ids.lastMillis()) + leaseMillis;
  }

  /** A lease was taken: every id from now on is of a millisecond after the one its previous holder stored. */
  public synchronized void startAfter(long previousHighWaterMillis) {
    ids.startAfter(previousHighWaterMillis);
  }

  /**
   * The database holds the lease for this node with {@code highWaterMillis}, valid here until {@code untilNanos}
   * ({@link System#nanoTime}). A renewal answered after a later one (it hung while the database was away) changes
   * nothing: it would take the lease back to an end that has passed. One answered only after the end of the validity
   * it gives leaves the ids stopped for the database's absence, until a renewal answers in time.
   */
  public synchronized void heldUntil(long highWaterMillis, long untilNanos) {
    if (held && untilNanos - heldUntilNanos < 0) {
      return;
    }
    this.held = true;
    if (!lapsed(untilNanos)) {
      this.databaseUnreachable = false;
    }
    this.highWaterMillis = highWaterMillis;
    this.heldUntilNanos = untilNanos;
  }

  /** Whether a lease valid until {@code untilNanos} has ended by now. */
  public synchronized boolean lapsed(long untilNanos) {
    return nanoClock.getAsLong() - untilNanos > 0;
  }

  /** The last attempt to take or renew the lease could not reach the database (true), or it did (false). */
  public synchronized void databaseUnreachable(boolean unreachable) {
    this.databaseUnreachable = unreachable;
    if (unreachable) {
      unreachableAtNanos = nanoClock.getAsLong();
      everUnreachable = true;
    }
  }

  /**
   * The lease ended (or was never taken) because its renewals could not reach the database: none got through for
   * about {@code node.leaseSeconds} (nine tenths of it since the last that did). Creates then answer 503
   * database_unavailable; in a cluster the node gives up its shards.
   */
  public synchronized boolean lapsedForTheDatabase() {
    return databaseUnreachable && (!held || lapsed(heldUntilNanos));
  }

  /** The lease is held, and every attempt to take or renew it in the last {@code nanos} reached the database. */
  public synchronized boolean reachedTheDatabaseFor(long nanos) {
    return held && !lapsed(heldUntilNanos) && !databaseUnreachable
        && (!everUnreachable || nanoClock.getAsLong() - unreachableAtNanos >= nanos);
  }

  /** No more ids; answers the millisecond of the last one, the high-water mark to leave to the next holder. */
  public synchronized long release() {
    held = false;
    return ids.lastMillis();
  }
}
