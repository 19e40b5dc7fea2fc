package ordertimeout.timer;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import ordertimeout.metrics.Meters;

import java.util.BitSet;

/**
 * The shards whose timers this node keeps and sweeps, and which of them the wheel has loaded. One
 * node alone owns them all; in a cluster the set follows the partition assignment of the timer
 * consumer group. Read from several event loops; every change publishes new copies.
 */
public final class OwnedShards {
  private volatile BitSet owned;
  private volatile BitSet loaded = new BitSet();
  /** False in a cluster until the group's first assignment: owning nothing then means "not told yet". */
  private volatile boolean assigned;

  private OwnedShards(BitSet owned, boolean assigned) {
    this.owned = owned;
    this.assigned = assigned;
  }

  public static OwnedShards all(int shards) {
    BitSet owned = new BitSet(shards);
    owned.set(0, shards);
    return new OwnedShards(owned, true);
  }

  public static OwnedShards none(int shards) {
    return new OwnedShards(new BitSet(shards), false);
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

  public boolean owns(int shard) {
    return owned.get(shard);
  }

  public int[] list() {
    return owned.stream().toArray();
  }

  /** Gained shards count as owned at once (their timers are taken) and as loaded once the wheel says so. */
  public synchronized void add(int[] gained) {
    owned = with(owned, gained, true);
    loaded = with(loaded, gained, false);
    assigned = true;
  }

  public synchronized void remove(int[] lost) {
    owned = with(owned, lost, false);
    loaded = with(loaded, lost, false);
  }

  public boolean isLoaded(int shard) {
    return loaded.get(shard);
  }

  /** The wheel holds these shards' pending deadlines (those it still owns). */
  public synchronized void markLoaded(int[] shardsLoaded) {
    BitSet next = with(loaded, shardsLoaded, true);
    next.and(owned);
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
