package ordertimeout.order;

import org.junit.jupiter.api.Test;

import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Ids only while the lease holds and below its high-water mark, on clocks the test moves. */
class LeasedOrderIdsTest {
  private static final long T = 1_735_689_600_000L + 86_400_000L;

  private final AtomicLong wall = new AtomicLong(T);
  private final AtomicLong nanos = new AtomicLong(1_000);
  private final LeasedOrderIds ids = new LeasedOrderIds(new OrderIds(4, wall::get), wall::get, nanos::get);

  @Test
  void noIdBeforeTheLeaseIsHeldNorAfterItsValidityEndsUntilARenewal() {
    assertUnavailable("does not hold the lease");
    ids.heldUntil(T + 10_000, 5_000);
    long first = ids.next();
    nanos.set(5_000);
    assertThat(ids.next()).as("the last nanosecond of the lease").isGreaterThan(first);
    nanos.set(5_001);
    assertUnavailable("does not hold the lease");
    ids.heldUntil(T + 10_000, 9_000);
    assertThat(ids.next()).isGreaterThan(first);
  }

  @Test
  void noIdPastTheHighWaterMarkEvenWhenTheClockJumpsAhead() {
    ids.heldUntil(ids.highWaterFor(10_000), Long.MAX_VALUE);
    long before = ids.next();
    wall.set(T + 10_000);
    assertUnavailable("passed the high-water mark");
    ids.heldUntil(ids.highWaterFor(10_000), Long.MAX_VALUE);
    assertThat(ids.next() >>> 22).as("the renewal moved the mark past the clock").isGreaterThan(before >>> 22);
  }

  @Test
  void idsOnTheNodesShardsOnlyAndAnyShardWhenItOwnsNone() {
    ids.heldUntil(T + 60_000, Long.MAX_VALUE);
    int shards = 64;
    long previous = 0;
    // about 3,000 ids drawn: all in one millisecond of the still clock, so the ids below follow one another
    for (int i = 0; i < 1_000; i++) {
      long id = ids.nextOnShards(shard -> shard % 3 == 1, shards);
      assertThat(OrderIds.shardOf(id, shards) % 3).as("a shard of the third this node owns").isEqualTo(1);
      assertThat(id).as("ids still increase").isGreaterThan(previous);
      previous = id;
    }
    long first = ids.nextOnShards(shard -> true, shards);
    assertThat(ids.nextOnShards(shard -> true, shards)).as("owning every shard, no id passed over")
        .isEqualTo(first + 1);
    long none = ids.nextOnShards(shard -> false, shards);
    assertThat(none).as("owning none: the last of the tries").isEqualTo(first + 1 + LeasedOrderIds.SHARD_TRIES);
  }

  @Test
  void aReleaseStopsTheIdsAndAnswersTheLastMillisecond() {
    ids.startAfter(T + 500);
    ids.heldUntil(T + 60_000, Long.MAX_VALUE);
    ids.next();
    assertThat(ids.release()).as("the millisecond after the previous holder's mark").isEqualTo(T + 501);
    assertUnavailable("does not hold the lease");
  }

  @Test
  void aLeaseLapsedBecauseTheDatabaseWasUnreachableAnswersDatabaseUnavailableUntilARenewal() {
    ids.heldUntil(T + 10_000, 5_000);
    ids.databaseUnreachable(true);
    assertThat(ids.next()).as("still within the lease").isPositive();
    nanos.set(5_001);
    assertThatThrownBy(ids::next).isInstanceOf(OrderRejected.class)
        .extracting(failure -> ((OrderRejected) failure).reason()).isEqualTo(OrderRejected.Reason.DATABASE_UNAVAILABLE);
    ids.heldUntil(T + 10_000, 9_000);
    assertThat(ids.next()).as("a renewal got through").isPositive();
  }

  @Test
  void theLeaseLapsedForTheDatabaseOnlyOnceItEndedWithTheRenewalsFailingAndReachedItAgainOnlyAfterAWhile() {
    assertThat(ids.reachedTheDatabaseFor(1_000)).as("no lease yet").isFalse();
    assertThat(ids.lapsedForTheDatabase()).as("no lease yet, but no renewal failed either").isFalse();
    ids.databaseUnreachable(true);
    assertThat(ids.lapsedForTheDatabase()).as("no lease: the first take could not reach the database").isTrue();
    ids.heldUntil(T + 10_000, 5_000);
    assertThat(ids.lapsedForTheDatabase()).isFalse();
    assertThat(ids.reachedTheDatabaseFor(1)).as("right after the failure").isFalse();
    nanos.set(2_000);
    assertThat(ids.reachedTheDatabaseFor(1_000)).as("1,000 ns after the failure").isTrue();
    assertThat(ids.reachedTheDatabaseFor(1_001)).isFalse();
    nanos.set(3_000);
    ids.databaseUnreachable(true);
    assertThat(ids.lapsedForTheDatabase()).as("a renewal failed, but the lease still runs").isFalse();
    assertThat(ids.reachedTheDatabaseFor(1)).isFalse();
    nanos.set(5_001);
    assertThat(ids.lapsedForTheDatabase()).as("the lease ended with its renewals failing").isTrue();
    ids.heldUntil(T + 12_000, 9_000);
    assertThat(ids.lapsedForTheDatabase()).isFalse();
    assertThat(ids.reachedTheDatabaseFor(2_001)).as("the last failure was 2,001 ns ago").isTrue();
    assertThat(ids.reachedTheDatabaseFor(2_002)).isFalse();
    ids.release();
    assertThat(ids.reachedTheDatabaseFor(1)).as("released").isFalse();
  }

  @Test
  void aRenewalAnsweredAfterALaterOneDoesNotShortenTheLease() {
    ids.heldUntil(T + 20_000, 9_000);
    ids.heldUntil(T + 10_000, 5_000);
    nanos.set(6_000);
    assertThat(ids.next()).as("still held until the later renewal's end").isPositive();
  }

  @Test
  void aRenewalAnsweredAfterItsValidityEndedLeavesTheIdsStoppedForTheDatabase() {
    ids.heldUntil(T + 10_000, 5_000);
    ids.databaseUnreachable(true);
    nanos.set(8_000);
    ids.heldUntil(T + 12_000, 7_000);
    assertThatThrownBy(ids::next).isInstanceOf(OrderRejected.class)
        .extracting(failure -> ((OrderRejected) failure).reason()).isEqualTo(OrderRejected.Reason.DATABASE_UNAVAILABLE);
    ids.heldUntil(T + 20_000, 17_000);
    assertThat(ids.next()).as("a renewal answered in time").isPositive();
  }

  private void assertUnavailable(String why) {
    assertThatThrownBy(ids::next).isInstanceOf(OrderRejected.class).hasMessageContaining(why)
        .extracting(failure -> ((OrderRejected) failure).reason()).isEqualTo(OrderRejected.Reason.ORDER_ID_UNAVAILABLE);
  }
}
