package ordertimeout.order;

import ordertimeout.clock.WallClock;
import org.junit.jupiter.api.Test;

import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The id layout, on a clock the test holds still or turns back; and the shard function, which must never change. */
class OrderIdsTest {
  private static final long EPOCH = 1_735_689_600_000L; // 2025-01-01T00:00:00Z
  private static final long T = EPOCH + 86_400_000L;

  private static long millisOf(long id) {
    return (id >>> 22) + EPOCH;
  }

  private static long nodeOf(long id) {
    return (id >>> 12) & 1023;
  }

  private static long sequenceOf(long id) {
    return id & 4095;
  }

  @Test
  void anIdIsMillisSince2025ThenNodeThenSequence() {
    AtomicLong clock = new AtomicLong(EPOCH + 1);
    OrderIds ids = new OrderIds(1023, clock::get);
    assertThat(ids.next()).isEqualTo((1L << 22) | (1023L << 12));
    assertThat(ids.next()).as("the same millisecond: next in sequence").isEqualTo((1L << 22) | (1023L << 12) | 1);
    clock.set(T);
    long id = new OrderIds(5, clock::get).next();
    assertThat(millisOf(id)).isEqualTo(T);
    assertThat(nodeOf(id)).isEqualTo(5);
    assertThat(sequenceOf(id)).isZero();
  }

  @Test
  void theSequenceStartsAgainInEachNewMillisecond() {
    AtomicLong clock = new AtomicLong(T);
    OrderIds ids = new OrderIds(3, clock::get);
    ids.next();
    ids.next();
    clock.set(T + 5);
    long id = ids.next();
    assertThat(millisOf(id)).isEqualTo(T + 5);
    assertThat(sequenceOf(id)).isZero();
    assertThat(nodeOf(id)).isEqualTo(3);
  }

  @Test
  void the4097thIdOfAMillisecondBorrowsTheNextOne() {
    AtomicLong clock = new AtomicLong(T);
    OrderIds ids = new OrderIds(7, clock::get);
    long previous = -1;
    for (int i = 0; i < 4096; i++) {
      long id = ids.next();
      assertThat(millisOf(id)).isEqualTo(T);
      assertThat(sequenceOf(id)).isEqualTo(i);
      assertThat(id).isGreaterThan(previous);
      previous = id;
    }
    long borrowed = ids.next();
    assertThat(millisOf(borrowed)).isEqualTo(T + 1);
    assertThat(sequenceOf(borrowed)).isZero();
    assertThat(nodeOf(borrowed)).isEqualTo(7);
    long next = ids.next();
    assertThat(millisOf(next)).as("the clock still says T: the borrowed millisecond goes on").isEqualTo(T + 1);
    assertThat(sequenceOf(next)).isEqualTo(1);
  }

  @Test
  void idsKeepIncreasingWhenTheWallClockStepsBack() {
    AtomicLong clock = new AtomicLong(T + 10);
    OrderIds ids = new OrderIds(0, clock::get);
    long first = ids.next();
    clock.set(T);
    long second = ids.next();
    assertThat(second).isGreaterThan(first);
    assertThat(millisOf(second)).isEqualTo(T + 10);
    assertThat(sequenceOf(second)).isEqualTo(1);
  }

  @Test
  void afterAHighWaterMarkIdsStartPastItEvenOnAClockBehindIt() {
    AtomicLong clock = new AtomicLong(T);
    OrderIds ids = new OrderIds(9, clock::get);
    long before = ids.next();
    ids.startAfter(T + 60_000);
    long id = ids.next();
    assertThat(millisOf(id)).as("the millisecond after the mark, not the clock's").isEqualTo(T + 60_001);
    assertThat(sequenceOf(id)).isZero();
    assertThat(ids.next()).isEqualTo(id + 1);
    assertThat(ids.lastMillis()).isEqualTo(T + 60_001);
    ids.startAfter(T);
    assertThat(ids.next()).as("a lower mark moves nothing back").isEqualTo(id + 2).isGreaterThan(before);
  }

  @Test
  void idsFromTheRealClockIncreaseAndCarryTheNodeAndTheTime() {
    OrderIds ids = new OrderIds(42, WallClock.SYSTEM);
    long before = System.currentTimeMillis();
    long previous = ids.next();
    for (int i = 0; i < 10_000; i++) {
      long id = ids.next();
      assertThat(id).isGreaterThan(previous);
      assertThat(nodeOf(id)).isEqualTo(42);
      if (millisOf(id) == millisOf(previous)) {
        assertThat(sequenceOf(id)).isEqualTo(sequenceOf(previous) + 1);
      } else {
        assertThat(sequenceOf(id)).as("a new millisecond").isZero();
      }
      previous = id;
    }
    long after = System.currentTimeMillis();
    assertThat(millisOf(previous)).isBetween(before, after + 10_000 / 4096 + 1);
  }

  @Test
  void aNodeIdMustFitItsTenBits() {
    assertThatThrownBy(() -> new OrderIds(-1, WallClock.SYSTEM)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> new OrderIds(1024, WallClock.SYSTEM)).isInstanceOf(IllegalArgumentException.class);
    assertThat(nodeOf(new OrderIds(0, WallClock.SYSTEM).next())).isZero();
    assertThat(nodeOf(new OrderIds(1023, WallClock.SYSTEM).next())).isEqualTo(1023);
  }

  /**
   * Stored orders carry their shard and every node computes it again from the id (the timer, the fan-out): a
   * changed function would give existing orders to the wrong shard. These values pin it.
   */
  @Test
  void theShardFunctionNeverChanges() {
    assertThat(OrderIds.shardOf(1L, 64)).isEqualTo(44);
    assertThat(OrderIds.shardOf(42L, 64)).isEqualTo(12);
    assertThat(OrderIds.shardOf(1L << 22, 64)).isEqualTo(55);
    assertThat(OrderIds.shardOf(123_456_789_012_345L, 64)).isEqualTo(1);
    assertThat(OrderIds.shardOf(42L, 1000)).isEqualTo(340);
    assertThat(OrderIds.shardOf(123_456_789_012_345L, 1000)).isEqualTo(617);
    assertThat(OrderIds.shardOf(-1L, 1000)).as("a hash with its top bit set is still a shard").isEqualTo(289);
    assertThat(OrderIds.shardOf(Long.MIN_VALUE, 1000)).isEqualTo(707);
  }

  @Test
  void consecutiveIdsSpreadOverEveryShard() {
    AtomicLong clock = new AtomicLong(T);
    OrderIds ids = new OrderIds(1, clock::get);
    int[] perShard = new int[64];
    for (int i = 0; i < 64 * 100; i++) {
      int shard = OrderIds.shardOf(ids.next(), 64);
      assertThat(shard).isBetween(0, 63);
      perShard[shard]++;
    }
    for (int shard = 0; shard < 64; shard++) {
      assertThat(perShard[shard]).as("shard %d: about 100", shard).isBetween(50, 150);
    }
  }
}
