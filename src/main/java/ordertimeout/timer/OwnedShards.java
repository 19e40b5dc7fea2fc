package ordertimeout.timer;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import ordertimeout.metrics.Meters;

import java.util.BitSet;

/**
 * The shards whose timers this node keeps and sweeps, and which of them the wheel has loaded. One
 * node alone owns them all; in a cluster the set follows the partition assignment of the timer
 * consumer group. Read from several event loops; every change publishes new copies.
 *
 * <p>Each gain of shards has a number, and a shard counts as loaded only by the load of the gain that gave it to this
 * node last: a load of an earlier gain, still running when the shard was lost and gained again, read the database
 * before the orders another node took on the shard meanwhile.
 */
public final class OwnedShards {
  /** The gain of every shard of a node alone, owned from the start. */
  public static final long FROM_THE_START = 0;

  private volatile BitSet owned;
  private volatile BitSet loaded = new BitSet();
  /** False in a cluster until the group's first assignment: owning nothing then means "not told yet". */
  private volatile boolean assigned;
  /** The number of the last gain; {@code gainedIn[shard]}: that of the gain which gave this node the shard last. */
  private long gains = FROM_THE_START;
  private final long[] gainedIn;
  private volatile Runnable onChange = () -> { };

  private OwnedShards(int shards, BitSet owned, boolean assigned) {
    this.owned = owned;
    this.assigned = assigned;
    this.gainedIn = new long[shards];
  }

  public static OwnedShards all(int shards) {
    BitSet owned = new BitSet(shards);
    owned.set(0, shards);
    return new OwnedShards(shards, owned, true);
  }

  public static OwnedShards none(int shards) {
    return new OwnedShards(shards, new BitSet(shards), false);
  }

  /** Registers the gauges of how many shards this node owns and whether the wheel holds them all. */
  public OwnedShards bindTo(MeterRegistry registry) {
    Gauge.builder(Meters.SHARDS_OWNED, this, shards -> shards.owned.cardinality())
        .description("Shards whose timers this node keeps (all of them on a node alone; its partitions of the timer topic in a cluster)")
        .strongReference(true)
        .register(registry);
    Gauge.builder(Meters.WHEEL_LOADED, this, shards -> shards.allLoaded() ? 1 : 0)
        .description("1 when the wheel holds every owned shard's pending deadlines")
        .strongReference(true)
        .register(registry);
    return this;
  }

  /** Called after each gain or loss of shards, on the thread that made it. */
  public void onChange(Runnable listener) {
    onChange = listener;
  }

  public boolean owns(int shard) {
    return owned.get(shard);
  }

  public int[] list() {
    return owned.stream().toArray();
  }

  /**
   * Gained shards count as owned at once (their timers are taken) and as loaded once the wheel says so. Answers the
   * number of this gain, which the wheel names when it has loaded them ({@link #markLoaded}).
   */
  public synchronized long add(int[] gained) {
    long gain = ++gains;
    for (int shard : gained) {
      gainedIn[shard] = gain;
    }
    owned = with(owned, gained, true);
    loaded = with(loaded, gained, false);
    assigned = true;
    onChange.run();
    return gain;
  }

  public synchronized void remove(int[] lost) {
    owned = with(owned, lost, false);
    loaded = with(loaded, lost, false);
    onChange.run();
  }

  /** Whether the group has assigned this node shards (none, maybe) at least once; always for a node alone. */
  public boolean assigned() {
    return assigned;
  }

  public boolean isLoaded(int shard) {
    return loaded.get(shard);
  }

  /** Whether this node owns the shard by that gain: it was not lost, nor gained again, since. */
  public synchronized boolean ownsSince(int shard, long gain) {
    return owned.get(shard) && gainedIn[shard] == gain;
  }

  /**
   * The number of the gain that gave this node each shard last, indexed by shard (that of a shard it lost stays), for a
   * load of shards it owns already to name ({@link #ownsSince}).
   */
  public synchronized long[] gains() {
    return gainedIn.clone();
  }

  /** The wheel holds the pending deadlines of these shards, read for that gain: those this node owns by it. */
  public synchronized void markLoaded(int[] shardsLoaded, long gain) {
    BitSet next = (BitSet) loaded.clone();
    for (int shard : shardsLoaded) {
      if (ownsSince(shard, gain)) {
        next.set(shard);
      }
    }
    loaded = next;
  }

  /** The wheel was emptied. */
  public synchronized void forgetLoaded() {
    loaded = new BitSet();
  }

  /** What readiness asks: the node has been given its shards and the wheel holds the deadlines of every one. */
  public boolean allLoaded() {
    if (!assigned) {
      return false;
    }
    BitSet notLoaded = (BitSet) owned.clone();
    notLoaded.andNot(loaded);
    return notLoaded.isEmpty();
  }

  private static BitSet with(BitSet current, int[] shards, boolean value) {
    BitSet next = (BitSet) current.clone();
    for (int shard : shards) {
      next.set(shard, value);
    }
    return next;
  }
}
