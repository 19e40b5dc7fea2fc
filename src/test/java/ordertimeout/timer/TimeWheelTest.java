package ordertimeout.timer;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.Random;

import static ordertimeout.timer.TimeWheel.CLOSE;
import static ordertimeout.timer.TimeWheel.REMIND;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

@Timeout(30) // a lost timer could otherwise keep a stepping loop going for long
class TimeWheelTest {
  private static final long START = 1_700_000_000_123L;
  private static final long TICK = 10;
  private static final long SECOND = 1_000;
  private static final long MINUTE = 60 * SECOND;
  private static final long HOUR = 60 * MINUTE;
  private static final long DAY = 24 * HOUR;
  private static final int BATCH = 128;

  /**
   * Delays (ms) that land on every level of the wheel and on the edges between levels: 2_560, 163_840, 10_485_760 and
   * 671_088_640 ms are 2^8, 2^14, 2^20 and 2^26 ticks of 10 ms.
   */
  private static final long[] DELAYS_AT_EVERY_LEVEL = {
    0, 1, 9, 10, 11, 2_549, 2_550, 2_551, 2_560, 2_561, 5 * SECOND, 163_830, 163_840, 163_841, 3 * MINUTE,
    15 * MINUTE, 2 * HOUR + 17, 2_913 * SECOND, 10_485_760, 10_485_771, 29 * HOUR + 3, 7 * DAY,
    671_088_640, 671_088_641, 8 * DAY + 12_345, 30 * DAY
  };

  @Test
  void firesOnTheFirstTickBoundaryAtOrAfterTheDueTimeAndNeverBefore() {
    TimeWheel wheel = new TimeWheel(TICK, START, 16);
    Recorder sink = new Recorder();
    wheel.schedule(1, START + 25, CLOSE); // belongs to the boundary START + 30
    wheel.schedule(2, START + 40, REMIND); // exactly on a boundary

    for (long now = START; now < START + 30; now++) {
      assertThat(sink.advance(wheel, now, BATCH)).as("now=%d", now - START).isZero();
    }
    assertThat(sink.advance(wheel, START + 30, BATCH)).isEqualTo(1);
    assertThat(sink.firedAt).containsEntry(1L, START + 30);
    assertThat(sink.advance(wheel, START + 39, BATCH)).isZero();
    assertThat(sink.advance(wheel, START + 40, BATCH)).isEqualTo(1);
    assertThat(sink.firedAt).containsEntry(2L, START + 40);
    assertThat(wheel.pending()).isZero();
  }

  @Test
  void cancellingOneKindLeavesTheOrdersOtherTimer() {
    TimeWheel wheel = new TimeWheel(TICK, START, 16);
    Recorder sink = new Recorder();
    wheel.schedule(7, START + 100, REMIND);
    wheel.schedule(7, START + 500, CLOSE);

    assertThat(wheel.cancel(7, REMIND)).isEqualTo(1);
    assertThat(wheel.cancel(7, REMIND)).isZero();
    assertThat(wheel.pending()).isEqualTo(1);
    sink.advance(wheel, START + 1_000, BATCH);
    assertThat(sink.reminds).isEmpty();
    assertThat(sink.closes).containsExactly(7L);
  }

  @Test
  void cancelWhereDropsOnlyTheMatchingOrdersAtEveryLevelAndTheRestStillFire() {
    TimeWheel wheel = new TimeWheel(TICK, START, 16);
    Recorder sink = new Recorder();
    Map<Long, Long> dueById = scheduleAtEveryLevel(wheel, START);
    dueById.keySet().forEach(id -> wheel.schedule(id, START + 5, REMIND)); // a second timer per order
    int before = wheel.pending();

    int cancelled = wheel.cancelWhere(id -> id % 2 == 0);

    long even = dueById.keySet().stream().filter(id -> id % 2 == 0).count();
    assertThat(cancelled).isEqualTo(2 * even);
    assertThat(wheel.pending()).isEqualTo(before - 2 * even);
    for (long now = START; now <= START + 31 * DAY && wheel.pending() > 0; now += HOUR) {
      sink.advance(wheel, now, BATCH);
    }
    assertThat(wheel.pending()).isZero();
    assertThat(sink.firedAt.keySet()).isNotEmpty().allMatch(id -> id % 2 != 0);
    assertThat(sink.firedAt.keySet()).containsExactlyInAnyOrderElementsOf(
        dueById.keySet().stream().filter(id -> id % 2 != 0).toList());
  }

  @Test
  void removeWhereHandsOutEachMatchingTimerWithItsBoundaryAtEveryLevelPastDueAndFar() {
    TimeWheel wheel = new TimeWheel(TICK, START, 16);
    Recorder sink = new Recorder();
    long now = START + 123_457; // a position not aligned to any level
    sink.advance(wheel, now, BATCH);
    Map<Long, Long> dueById = scheduleAtEveryLevel(wheel, now);
    long pastDue = 1_000;
    long far = 2_000;
    dueById.put(pastDue, now - 5 * SECOND - 3); // its tick processed already: the expired list
    wheel.schedule(pastDue, now - 5 * SECOND - 3, CLOSE);
    dueById.put(far, now + 600 * DAY + 7); // past the 10 ms wheel's ~497 days: the far list
    wheel.schedule(far, now + 600 * DAY + 7, CLOSE);
    wheel.schedule(far, now + 400 * DAY, REMIND); // a second timer of the same order, on the last level
    wheel.cancel(2); // a tombstone is not handed out
    dueById.remove(2L);
    int before = wheel.pending();

    Map<String, Long> removed = new HashMap<>();
    int count = wheel.removeWhere(id -> id % 2 == 0,
        (id, kind, dueMillis) -> assertThat(removed.put(id + (kind == CLOSE ? "c" : "r"), dueMillis)).isNull());

    Map<String, Long> expected = new HashMap<>();
    dueById.forEach((id, due) -> {
      if (id % 2 == 0 && id != far) {
        expected.put(id + "c", boundary(due, TICK)); // even ids: closes (scheduleAtEveryLevel), the one past due too
      }
    });
    expected.put(far + "c", boundary(now + 600 * DAY + 7, TICK));
    expected.put(far + "r", boundary(now + 400 * DAY, TICK));
    assertThat(removed).isEqualTo(expected);
    assertThat(count).isEqualTo(expected.size());
    assertThat(wheel.pending()).isEqualTo(before - count);
    assertThat(wheel.removeWhere(id -> id % 2 == 0, (id, kind, dueMillis) -> {})).as("nothing left to remove").isZero();
    for (long at = now; at <= now + 601 * DAY && wheel.pending() > 0; at += HOUR) {
      sink.advance(wheel, at, BATCH);
    }
    assertThat(wheel.pending()).isZero();
    assertThat(sink.firedAt.keySet()).isNotEmpty().allMatch(id -> id % 2 != 0);
  }

  @Test
  void timersAtEveryLevelFireExactlyOnTheirTickBoundary() {
    TimeWheel wheel = new TimeWheel(TICK, START, 16);
    Recorder sink = new Recorder();
    long now = START + 123_457; // schedule from a position that is not aligned to any level
    sink.advance(wheel, now, BATCH);
    Map<Long, Long> dueById = scheduleAtEveryLevel(wheel, now);

    // The clock halves its distance to the next boundary each step: big jumps far away, 1 ms steps close by.
    while (sink.firedAt.size() < dueById.size()) {
      long nextBoundary = dueById.entrySet().stream()
          .filter(e -> !sink.firedAt.containsKey(e.getKey()))
          .mapToLong(e -> boundary(e.getValue(), TICK)).min().orElseThrow();
      assertThat(nextBoundary).as("a timer did not fire at its boundary").isGreaterThanOrEqualTo(now);
      now += Math.max(1, (nextBoundary - now) / 2);
      sink.advance(wheel, now, BATCH);
    }
    dueById.forEach((id, due) -> assertThat(sink.firedAt.get(id)).as("timer due at +%d ms", due - START)
        .isEqualTo(boundary(due, TICK)));
    assertThat(wheel.pending()).isZero();
  }

  @Test
  void timersAtEveryLevelFireWithinOneTickPlusOneStepOfTheirDueTimeUnderASteppingClock() {
    for (long step : new long[] {997, 61_003}) {
      TimeWheel wheel = new TimeWheel(TICK, START, 16);
      Recorder sink = new Recorder();
      Map<Long, Long> dueById = scheduleAtEveryLevel(wheel, START);
      for (long now = START; sink.firedAt.size() < dueById.size() && now < START + 31 * DAY; now += step) {
        sink.advance(wheel, now, BATCH);
      }
      dueById.forEach((id, due) -> assertThat(sink.firedAt.get(id))
          .as("timer due at +%d ms, step %d", due - START, step)
          .isBetween(due, due + TICK + step));
    }
  }

  @Test
  void matchesAReferenceModelUnderRandomSchedulesCancelsAndClockSteps() {
    Random random = new Random(20240601);
    runAgainstReference(random, TICK, 200_000, 40_000, new long[] {20, 3 * SECOND, 3 * MINUTE, 3 * HOUR, 8 * DAY},
        new long[] {30, 5 * SECOND, 10 * MINUTE, 3 * HOUR});
  }

  @Test
  void farFutureTimersAndTheTickCounterWrappingPast32BitsMatchAReferenceModel() {
    // With 1 ms ticks the wheel's horizon is 2^32 ms (~49.7 days): later timers wait in the far list, and the
    // run lasts long enough for the absolute tick to pass 2^32.
    Random random = new Random(7);
    runAgainstReference(random, 1, 30_000, 5_000, new long[] {50, 5 * MINUTE, 3 * DAY, 60 * DAY, 400 * DAY},
        new long[] {100, 3 * HOUR, 10 * DAY, 40 * DAY});
  }

  @Test
  void cancelRemovesEveryTimerOfTheOrderReturnsTheCountAndCancelledTimersNeverFire() {
    TimeWheel wheel = new TimeWheel(TICK, START, 16);
    Recorder sink = new Recorder();
    wheel.schedule(1, START + 5 * MINUTE, REMIND);
    wheel.schedule(1, START + 15 * MINUTE, CLOSE);
    wheel.schedule(1, START + 15 * MINUTE, CLOSE); // duplicates are allowed
    wheel.schedule(2, START + 15 * MINUTE, CLOSE);
    assertThat(wheel.pending()).isEqualTo(4);
    assertThat(wheel.pending(CLOSE)).isEqualTo(3);
    assertThat(wheel.pending(REMIND)).isEqualTo(1);

    assertThat(wheel.cancel(1)).isEqualTo(3);
    assertThat(wheel.pending()).isEqualTo(1);
    assertThat(wheel.pending(CLOSE)).isEqualTo(1);
    assertThat(wheel.pending(REMIND)).isZero();
    assertThat(wheel.cancel(1)).isZero();
    assertThat(wheel.cancel(99)).isZero();

    assertThat(sink.advance(wheel, START + DAY, BATCH)).isEqualTo(1);
    assertThat(sink.closes).containsExactly(2L);
    assertThat(sink.reminds).isEmpty();
    assertThat(wheel.cancel(2)).as("a fired timer is no longer pending").isZero();
  }

  @Test
  void duplicateSchedulesOfTheSameOrderAndKindBothFire() {
    TimeWheel wheel = new TimeWheel(TICK, START, 16);
    Recorder sink = new Recorder();
    wheel.schedule(7, START + 100, CLOSE);
    wheel.schedule(7, START + 2 * HOUR, CLOSE);
    assertThat(sink.advance(wheel, START + 3 * HOUR, BATCH)).isEqualTo(2);
    assertThat(sink.closes).containsExactly(7L, 7L);
  }

  @Test
  void aPastDueTimerFiresOnTheNextAdvanceEvenIfTheClockDidNotMove() {
    TimeWheel wheel = new TimeWheel(TICK, START, 16);
    Recorder sink = new Recorder();
    sink.advance(wheel, START + HOUR, BATCH);
    wheel.schedule(1, START + 5, CLOSE);
    wheel.schedule(2, START + HOUR, REMIND); // the tick of this instant was processed already
    wheel.schedule(3, START - DAY, CLOSE);
    assertThat(wheel.pending()).isEqualTo(3);

    assertThat(sink.advance(wheel, START + HOUR, BATCH)).isEqualTo(3);
    assertThat(sink.closes).containsExactlyInAnyOrder(1L, 3L);
    assertThat(sink.reminds).containsExactly(2L);
    assertThat(wheel.pending()).isZero();
  }

  @Test
  void aTimerDueBeforeTheStartDoesNotFireWhileTheClockIsStillBeforeIt() {
    TimeWheel wheel = new TimeWheel(TICK, START, 16);
    Recorder sink = new Recorder();
    wheel.schedule(1, START - 500, CLOSE);
    assertThat(sink.advance(wheel, START - 1_000, BATCH)).isZero();
    assertThat(sink.advance(wheel, START - 500, BATCH)).isEqualTo(1);
  }

  @Test
  void batchesNeverExceedMaxBatchAndNeverMixKinds() {
    TimeWheel wheel = new TimeWheel(TICK, START, 16);
    for (long id = 0; id < 2_000; id++) {
      // even ids close, odd ids remind; spread over a few ticks and levels
      wheel.schedule(id, START + (id % 7) * (id % 3 == 0 ? 10 : 3_000), id % 2 == 0 ? CLOSE : REMIND);
    }
    int maxBatch = 64;
    List<Integer> batchSizes = new ArrayList<>();
    int[] firedByKind = new int[2];
    int fired = wheel.advance(START + MINUTE, maxBatch, (kind, ids, count) -> {
      batchSizes.add(count);
      firedByKind[kind] += count;
      for (int i = 0; i < count; i++) {
        assertThat(ids[i] % 2).as("kind of id %d", ids[i]).isEqualTo(kind == CLOSE ? 0 : 1);
      }
    });
    assertThat(fired).isEqualTo(2_000);
    assertThat(firedByKind).containsExactly(1_000, 1_000);
    assertThat(batchSizes).allSatisfy(size -> assertThat(size).isBetween(1, maxBatch));
    assertThat(batchSizes.stream().filter(size -> size == maxBatch).count())
        .as("full batches are handed out as soon as they fill").isGreaterThanOrEqualTo(30);
  }

  @Test
  void aLongGapIsProcessedInOneAdvanceWithoutVisitingEveryTick() {
    TimeWheel wheel = new TimeWheel(TICK, START, 16);
    Recorder sink = new Recorder();
    Random random = new Random(3);
    for (long id = 0; id < 100_000; id++) {
      wheel.schedule(id, START + random.nextLong(8 * DAY), id % 4 == 0 ? REMIND : CLOSE);
    }
    wheel.schedule(100_000, START + 3 * 365 * DAY, CLOSE);

    long began = System.nanoTime();
    assertThat(sink.advance(wheel, START + 9 * DAY, BATCH)).isEqualTo(100_000);
    assertThat(sink.advance(wheel, START + 3 * 365 * DAY - 1, BATCH)).isZero();
    assertThat(sink.advance(wheel, START + 3 * 365 * DAY, BATCH)).isEqualTo(1);
    long millis = (System.nanoTime() - began) / 1_000_000;
    System.out.printf("TimeWheel: jumping 3 years at 10 ms ticks with 100k timers took %d ms%n", millis);
    assertThat(millis).as("a tick-by-tick loop would visit 9.5e9 ticks").isLessThan(3_000);
  }

  @Test
  void theSinkMayScheduleAndCancelWhileTimersFire() {
    TimeWheel wheel = new TimeWheel(TICK, START, 16);
    wheel.schedule(1, START + 100, REMIND);
    wheel.schedule(2, START + 150, CLOSE);
    List<String> seen = new ArrayList<>();
    TimeWheel.DueSink sink = (kind, ids, count) -> {
      for (int i = 0; i < count; i++) {
        seen.add(kind + ":" + ids[i]);
        if (kind == REMIND) {
          wheel.schedule(ids[i], START + 200, CLOSE); // later: fires when due
          wheel.schedule(ids[i] + 100, START + 50, CLOSE); // already due: fires in this advance
          wheel.cancel(2);
        }
      }
    };
    assertThat(wheel.advance(START + 100, 1, sink)).isEqualTo(2);
    assertThat(seen).containsExactly("1:1", "0:101");
    assertThat(wheel.advance(START + 150, 1, sink)).isZero();
    assertThat(wheel.advance(START + 200, 1, sink)).isEqualTo(1);
    assertThat(seen).containsExactly("1:1", "0:101", "0:1");
    assertThat(wheel.pending()).isZero();
  }

  @Test
  void aPastDueTimerScheduledByTheSinkDuringAJumpOfYearsFiresInThatAdvance() {
    TimeWheel wheel = new TimeWheel(TICK, START, 16);
    wheel.schedule(1, START + DAY, REMIND); // nothing else: the wheel would jump straight to the end
    List<String> seen = new ArrayList<>();
    int fired = wheel.advance(START + 3 * 365 * DAY, 1, (kind, ids, count) -> {
      seen.add(kind + ":" + ids[0]);
      if (ids[0] == 1) wheel.schedule(3, START + DAY - 5, CLOSE);
      if (ids[0] == 3) wheel.schedule(4, START + DAY - 5, CLOSE); // while past-due timers are being fired
    });
    assertThat(fired).isEqualTo(3);
    assertThat(seen).containsExactly("1:1", "0:3", "0:4");
    assertThat(wheel.pending()).isZero();
  }

  @Test
  void clearDropsEverything() {
    TimeWheel wheel = new TimeWheel(TICK, START, 16);
    Recorder sink = new Recorder();
    for (long id = 0; id < 1_000; id++) wheel.schedule(id, START + id * MINUTE, CLOSE);
    wheel.schedule(5, START + 600 * DAY, REMIND);
    long initialBytes = new TimeWheel(TICK, START, 16).heapBytes();

    wheel.clear();
    assertThat(wheel.pending()).isZero();
    assertThat(wheel.heapBytes()).isEqualTo(initialBytes);
    assertThat(wheel.cancel(5)).isZero();
    assertThat(sink.advance(wheel, START + 700 * DAY, BATCH)).isZero();

    wheel.schedule(9, START + 700 * DAY + 1, CLOSE);
    assertThat(sink.advance(wheel, START + 701 * DAY, BATCH)).isEqualTo(1);
    assertThat(sink.closes).containsExactly(9L);
  }

  @Test
  void cellsOfCancelledTimersAreReusedInsteadOfGrowingTheArrays() {
    TimeWheel wheel = new TimeWheel(TICK, START, 1_000);
    Recorder sink = new Recorder();
    long bytes = wheel.heapBytes();
    for (int round = 0; round < 10; round++) {
      for (long id = 0; id < 1_000; id++) wheel.schedule(round * 1_000 + id, START + HOUR + id, CLOSE);
      for (long id = 0; id < 1_000; id++) assertThat(wheel.cancel(round * 1_000 + id)).isEqualTo(1);
    }
    for (long id = 0; id < 1_000; id++) wheel.schedule(50_000 + id, START + HOUR + id, CLOSE);
    assertThat(wheel.heapBytes()).isEqualTo(bytes);
    assertThat(sink.advance(wheel, START + 2 * HOUR, BATCH)).isEqualTo(1_000);
    assertThat(sink.closes).allSatisfy(id -> assertThat(id).isGreaterThanOrEqualTo(50_000));
  }

  @Test
  void reclaimingTombstonesKeepsPastDueFarAndWheelTimersAndTheSinkMayScheduleIntoAFullSlab() {
    TimeWheel wheel = new TimeWheel(1, START, 64); // 1 ms ticks: timers beyond ~49.7 days wait in the far list
    ReferenceTimers reference = new ReferenceTimers(1);
    long now = START + 5 * SECOND;
    wheel.advance(now, BATCH, (kind, ids, count) -> { });
    long id = 0;
    List<Long> toCancel = new ArrayList<>();
    for (long delay : new long[] {-3 * SECOND, 0, 7, 300, 90 * SECOND, 3 * HOUR, 20 * DAY, 60 * DAY, 400 * DAY}) {
      for (int copy = 0; copy < 7; copy++, id++) {
        byte kind = copy % 2 == 0 ? CLOSE : REMIND;
        wheel.schedule(id, now + delay + copy, kind);
        reference.schedule(id, now + delay + copy, kind);
        if (copy >= 3) toCancel.add(id);
      }
    }
    for (long cancelled : toCancel) assertThat(wheel.cancel(cancelled)).isEqualTo(reference.cancel(cancelled));
    long bytes = wheel.heapBytes();

    // 63 of 64 cells in use, 36 of them tombstones: the next schedules reclaim those instead of growing.
    for (int more = 0; more < 25; more++, id++) {
      wheel.schedule(id, now + more * MINUTE, CLOSE);
      reference.schedule(id, now + more * MINUTE, CLOSE);
    }
    assertThat(wheel.heapBytes()).isEqualTo(bytes);
    assertThat(wheel.pending()).isEqualTo(reference.pending);

    // Tombstones again (25, with 12 cells free): the sink schedules 3 timers for each that fires, so the slab fills
    // up during an advance, where it grows instead of reclaiming.
    for (long cancelled = 63; cancelled < 88; cancelled++) reference.cancel(cancelled);
    for (long cancelled = 63; cancelled < 88; cancelled++) wheel.cancel(cancelled);
    long[] nextId = {1_000};
    List<Long> fired = new ArrayList<>();
    TimeWheel.DueSink rescheduling = (kind, ids, count) -> {
      for (int i = 0; i < count; i++) {
        fired.add(ids[i] * TimeWheel.KIND_LIMIT + kind);
        if (ids[i] < 1_000) {
          for (int j = 0; j < 3; j++, nextId[0]++) {
            wheel.schedule(nextId[0], START + 500 * DAY + nextId[0], CLOSE);
            reference.schedule(nextId[0], START + 500 * DAY + nextId[0], CLOSE);
          }
        }
      }
    };
    for (long step : new long[] {1, 10, 400, 2 * MINUTE, 4 * HOUR, 30 * DAY, 100 * DAY, 600 * DAY}) {
      now += step;
      fired.clear();
      wheel.advance(now, 4, rescheduling);
      wheel.advance(now, 4, rescheduling); // past-due timers the sink scheduled may wait for the next advance
      List<Long> expected = reference.advance(now);
      fired.sort(null);
      expected.sort(null);
      assertThat(fired).as("at +%d ms", now - START).isEqualTo(expected);
    }
    assertThat(wheel.pending()).isZero();
    assertThat(reference.pending).isZero();
  }

  @Test
  void refusesATickCapacityKindOrBatchItCannotWorkWith() {
    assertThatThrownBy(() -> new TimeWheel(0, START, 16)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> new TimeWheel(TICK, START, -1)).isInstanceOf(IllegalArgumentException.class);
    TimeWheel wheel = new TimeWheel(1, START, 0); // the smallest allowed: 1 ms ticks, no capacity asked for
    Recorder sink = new Recorder();
    assertThatThrownBy(() -> wheel.schedule(1, START, (byte) TimeWheel.KIND_LIMIT)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> wheel.schedule(1, START, (byte) -1)).isInstanceOf(IllegalArgumentException.class);
    byte lastKind = TimeWheel.KIND_LIMIT - 1;
    wheel.schedule(1, START + 1, lastKind);
    assertThat(wheel.pending(lastKind)).isEqualTo(1);
    assertThat(wheel.pending((byte) TimeWheel.KIND_LIMIT)).as("no such kind").isZero();
    assertThat(wheel.pending((byte) -1)).isZero();
    assertThatThrownBy(() -> wheel.advance(START + 1, 0, sink)).isInstanceOf(IllegalArgumentException.class);
    List<Byte> kinds = new ArrayList<>();
    assertThat(wheel.advance(START + 1, 1, (kind, ids, count) -> kinds.add(kind))).isEqualTo(1);
    assertThat(kinds).containsExactly(lastKind);
  }

  @Test
  void heapBytesCountsEveryArray() {
    TimeWheel wheel = new TimeWheel(TICK, START, 16);
    // 16 cells of two longs, their hash chains, 16 buckets, one word of each free-cell bitmap; the slot heads
    long slab = 8 * 2 * 16 + 4 * 16 + 4 * 16 + 8 + 8;
    long slots = 4 * (256 + 4 * 64);
    assertThat(wheel.heapBytes()).isEqualTo(slab + slots);
    for (long id = 0; id < 8; id++) wheel.schedule(id, START + 600 * DAY, CLOSE); // beyond the horizon
    assertThat(wheel.heapBytes()).as("the far list: an int and a long for each of 8").isEqualTo(slab + slots + 12 * 8);
    wheel.schedule(8, START + 600 * DAY, CLOSE);
    assertThat(wheel.heapBytes()).as("grown by half, plus 8").isEqualTo(slab + slots + 12 * 20);
    wheel.schedule(9, START + SECOND, CLOSE);
    wheel.advance(START + SECOND, 100, (kind, ids, count) -> { });
    assertThat(wheel.heapBytes()).as("and the batch of the kind that fired").isEqualTo(slab + slots + 12 * 20 + 8 * 100);
  }

  @Test
  void aTimerExactlyAtTheHorizonWaitsInTheFarListAndFiresOnTime() {
    TimeWheel wheel = new TimeWheel(1, START, 16); // 1 ms ticks: the horizon is 2^32 ms ahead
    Recorder sink = new Recorder();
    long horizon = 1L << 32;
    wheel.schedule(1, START + horizon, CLOSE);
    // re-examined at the far list's first pass (tick 2^26), when it is again exactly at the horizon
    wheel.schedule(2, START + horizon + (1L << 26), CLOSE);
    assertThat(sink.advance(wheel, START + horizon - 1, BATCH)).isZero();
    assertThat(sink.advance(wheel, START + horizon, BATCH)).isEqualTo(1);
    assertThat(sink.closes).containsExactly(1L);
    assertThat(sink.advance(wheel, START + horizon + (1L << 26) - 1, BATCH)).isZero();
    assertThat(sink.advance(wheel, START + horizon + (1L << 26), BATCH)).isEqualTo(1);
    assertThat(sink.closes).containsExactly(1L, 2L);
  }

  @Test
  void anyDueTimeIsAcceptedTheEarliestFiringAtOnceTheLatestNever() {
    TimeWheel wheel = new TimeWheel(TICK, START, 16);
    Recorder sink = new Recorder();
    wheel.schedule(1, Long.MIN_VALUE, CLOSE);
    wheel.schedule(2, Long.MAX_VALUE, CLOSE);
    assertThat(sink.advance(wheel, START, BATCH)).isEqualTo(1);
    assertThat(sink.closes).containsExactly(1L);
    assertThat(sink.advance(wheel, START + 1_000 * 365 * DAY, BATCH)).isZero();
    assertThat(wheel.pending()).isEqualTo(1);

    TimeWheel startingBefore1970 = new TimeWheel(TICK, -START, 16); // Long.MAX_VALUE - start overflows here
    startingBefore1970.schedule(3, Long.MAX_VALUE, CLOSE);
    assertThat(sink.advance(startingBefore1970, -START + 1_000 * 365 * DAY, BATCH)).isZero();
    assertThat(startingBefore1970.pending()).isEqualTo(1);
  }

  @Test
  void cancelWhereWalksAFullSlab() {
    TimeWheel wheel = new TimeWheel(TICK, START, 16);
    Recorder sink = new Recorder();
    for (long id = 0; id < 16; id++) wheel.schedule(id, START + SECOND, CLOSE); // every cell in use
    assertThat(wheel.cancelWhere(id -> id % 2 == 0)).isEqualTo(8);
    assertThat(sink.advance(wheel, START + SECOND, BATCH)).isEqualTo(8);
    assertThat(sink.closes).allSatisfy(id -> assertThat(id % 2).isEqualTo(1));
  }

  @Test
  void aFullSlabAQuarterOfItTombstonesIsReclaimedRatherThanGrown() {
    TimeWheel wheel = new TimeWheel(TICK, START, 16);
    Recorder sink = new Recorder();
    for (long id = 0; id < 16; id++) wheel.schedule(id, START + HOUR, CLOSE);
    for (long id = 0; id < 4; id++) wheel.cancel(id);
    long bytes = wheel.heapBytes();
    wheel.schedule(16, START + HOUR, CLOSE);
    assertThat(wheel.heapBytes()).isEqualTo(bytes);
    assertThat(sink.advance(wheel, START + HOUR, BATCH)).isEqualTo(13);
  }

  @Test
  void cellsOfTombstonesPassedByTheClockAreFreeAgainAlsoForTheSink() {
    TimeWheel wheel = new TimeWheel(TICK, START, 16);
    for (long id = 0; id < 15; id++) wheel.schedule(id, START + SECOND, CLOSE);
    for (long id = 0; id < 15; id++) wheel.cancel(id);
    wheel.schedule(15, START + 2 * SECOND, CLOSE);
    long bytes = wheel.heapBytes() + 8 * BATCH; // the close batch the advance allocates
    List<Long> fired = new ArrayList<>();
    wheel.advance(START + 2 * SECOND, BATCH, (kind, ids, count) -> {
      // the sink cannot reclaim tombstones: it takes the cells their slot freed, or the slab grows
      for (long id = 100; id < 115; id++) wheel.schedule(id, START + HOUR, CLOSE);
    });
    assertThat(wheel.heapBytes()).isEqualTo(bytes);
    wheel.advance(START + HOUR, BATCH, (kind, ids, count) -> {
      for (int i = 0; i < count; i++) fired.add(ids[i]);
    });
    assertThat(fired).hasSize(15).allSatisfy(id -> assertThat(id).isBetween(100L, 114L));
  }

  @Test
  void cellsFreedBeyondTheFirst4096AreFoundThroughTheSecondBitmapLevel() {
    TimeWheel wheel = new TimeWheel(TICK, START, 5_000);
    Recorder sink = new Recorder();
    for (long id = 0; id < 4_096; id++) wheel.schedule(id, START + HOUR, CLOSE);
    for (long id = 4_096; id < 5_000; id++) wheel.schedule(id, START + SECOND, CLOSE);
    assertThat(sink.advance(wheel, START + SECOND, BATCH)).isEqualTo(904); // frees cells 4096-4999 only
    long bytes = wheel.heapBytes();
    for (long id = 10_000; id < 10_904; id++) wheel.schedule(id, START + 2 * HOUR, CLOSE);
    assertThat(wheel.heapBytes()).isEqualTo(bytes);
    sink.closes.clear();
    assertThat(sink.advance(wheel, START + 2 * HOUR, BATCH)).isEqualTo(5_000);
    assertThat(sink.closes).doesNotHaveDuplicates().hasSize(5_000);
    assertThat(sink.closes.stream().filter(id -> id < 4_096)).hasSize(4_096);
  }

  @Test
  void aWheelClearedWithoutShrinkingForgetsEveryCellAndCount() {
    TimeWheel wheel = new TimeWheel(TICK, START, 16);
    Recorder sink = new Recorder();
    for (long id = 0; id < 10; id++) wheel.schedule(id, START + SECOND, CLOSE);
    sink.advance(wheel, START + SECOND, BATCH); // cells 0-9 freed
    wheel.schedule(20, START + HOUR, REMIND);
    wheel.clear(); // capacity unchanged: the arrays are reset in place

    assertThat(wheel.pending(CLOSE)).isZero();
    assertThat(wheel.pending(REMIND)).isZero();
    assertThat(wheel.cancel(20)).as("not found through the order-id index").isZero();
    wheel.schedule(1, START + 2 * HOUR, CLOSE);
    wheel.schedule(2, START + 2 * HOUR, CLOSE);
    wheel.schedule(3, START + 2 * SECOND, CLOSE);
    sink.closes.clear();
    sink.advance(wheel, START + 2 * SECOND, BATCH);
    wheel.schedule(4, START + 2 * HOUR, CLOSE); // takes the cell order 3 freed, not one of the cleared ones
    sink.advance(wheel, START + 2 * HOUR, BATCH);
    assertThat(sink.closes).containsExactlyInAnyOrder(3L, 1L, 2L, 4L);
  }

  @Test
  void holdsTwoMillionPendingTimersInAtMost32BytesEach() {
    long presized = bytesPerTimerWith(2_000_000, 2_000_000);
    long grown = bytesPerTimerWith(2_000_000, 16);
    System.out.printf("TimeWheel: 2M pending timers take %d bytes each when presized, %d grown from 16%n",
        presized, grown);
    assertThat(presized).isLessThanOrEqualTo(32);
    assertThat(grown).as("1.5x growth leaves up to a third unused").isLessThanOrEqualTo(40);
  }

  private static long bytesPerTimerWith(int timers, int initialCapacity) {
    TimeWheel wheel = new TimeWheel(TICK, START, initialCapacity);
    Random random = new Random(11);
    for (int id = 0; id < timers; id++) {
      wheel.schedule(id, START + random.nextLong(8 * DAY), (id & 1) == 0 ? CLOSE : REMIND);
    }
    assertThat(wheel.pending()).isEqualTo(timers);
    return Math.round((double) wheel.heapBytes() / wheel.pending());
  }

  // ---- helpers ----

  private static Map<Long, Long> scheduleAtEveryLevel(TimeWheel wheel, long now) {
    Map<Long, Long> dueById = new HashMap<>();
    long id = 0;
    for (long delay : DELAYS_AT_EVERY_LEVEL) {
      for (long offset : new long[] {0, 3}) {
        dueById.put(id, now + delay + offset);
        wheel.schedule(id, now + delay + offset, id % 2 == 0 ? CLOSE : REMIND);
        id++;
      }
    }
    return dueById;
  }

  /** The instant of the first tick boundary at or after dueMillis. */
  private static long boundary(long dueMillis, long tick) {
    return START + Math.floorDiv(dueMillis - START + tick - 1, tick) * tick;
  }

  /**
   * Drives the wheel and a simple reference (a priority queue) with the same random operations and checks that each
   * advance fires exactly the same timers.
   */
  private static void runAgainstReference(Random random, long tick, int operations, int orderIds, long[] delayScales,
      long[] stepScales) {
    TimeWheel wheel = new TimeWheel(tick, START, 16);
    ReferenceTimers reference = new ReferenceTimers(tick);
    long now = START;
    List<Long> fired = new ArrayList<>();
    long[] recentlyScheduled = new long[1_024]; // half of the cancels pick from these, so that they hit
    TimeWheel.DueSink sink = (kind, ids, count) -> {
      assertThat(count).isBetween(1, 64);
      for (int i = 0; i < count; i++) fired.add(ids[i] * TimeWheel.KIND_LIMIT + kind);
    };
    for (int operation = 0; operation < operations; operation++) {
      int dice = random.nextInt(100);
      if (dice < 60) {
        long id = random.nextInt(orderIds);
        byte kind = random.nextBoolean() ? CLOSE : REMIND;
        long due = random.nextInt(20) == 0
            ? now - random.nextLong(5 * SECOND)
            : now + random.nextLong(delayScales[random.nextInt(delayScales.length)]);
        wheel.schedule(id, due, kind);
        reference.schedule(id, due, kind);
        recentlyScheduled[operation % recentlyScheduled.length] = id;
      } else if (dice < 75) {
        long id = random.nextBoolean()
            ? recentlyScheduled[random.nextInt(recentlyScheduled.length)] : random.nextInt(orderIds);
        assertThat(wheel.cancel(id)).isEqualTo(reference.cancel(id));
      } else {
        int scale = random.nextInt(100);
        int scaleIndex = scale < 70 ? 0 : scale < 90 ? 1 : scale < 98 ? 2 : 3;
        now += random.nextLong(stepScales[scaleIndex]);
        fired.clear();
        int count = wheel.advance(now, 64, sink);
        List<Long> expected = reference.advance(now);
        assertThat(count).isEqualTo(fired.size());
        fired.sort(null);
        expected.sort(null);
        assertThat(fired).as("operation %d, now=+%d ms", operation, now - START).isEqualTo(expected);
      }
      if (operation % 1_000 == 0) {
        assertThat(wheel.pending()).isEqualTo(reference.pending);
        assertThat(wheel.pending(CLOSE)).isEqualTo(reference.pendingByKind[CLOSE]);
      }
    }
    fired.clear();
    now += 500 * DAY;
    wheel.advance(now, 64, sink);
    List<Long> expected = reference.advance(now);
    fired.sort(null);
    expected.sort(null);
    assertThat(fired).isEqualTo(expected);
    assertThat(wheel.pending()).isZero();
  }

  /** What the wheel must do, written the obvious way. */
  private static final class ReferenceTimers {
    private static final class Timer {
      final long id;
      final byte kind;
      final long dueTick;
      boolean done;

      Timer(long id, byte kind, long dueTick) {
        this.id = id;
        this.kind = kind;
        this.dueTick = dueTick;
      }
    }

    private final long tick;
    private final PriorityQueue<Timer> queue = new PriorityQueue<>(Comparator.comparingLong(t -> t.dueTick));
    private final Map<Long, List<Timer>> byOrder = new HashMap<>();
    int pending;
    final int[] pendingByKind = new int[2];

    ReferenceTimers(long tick) {
      this.tick = tick;
    }

    void schedule(long id, long dueMillis, byte kind) {
      Timer timer = new Timer(id, kind, Math.floorDiv(dueMillis - START + tick - 1, tick));
      queue.add(timer);
      byOrder.computeIfAbsent(id, k -> new ArrayList<>()).add(timer);
      pending++;
      pendingByKind[kind]++;
    }

    int cancel(long id) {
      int cancelled = 0;
      for (Timer timer : byOrder.getOrDefault(id, List.of())) {
        if (!timer.done) {
          timer.done = true;
          pendingByKind[timer.kind]--;
          cancelled++;
        }
      }
      byOrder.remove(id);
      pending -= cancelled;
      return cancelled;
    }

    List<Long> advance(long nowMillis) {
      long nowTick = Math.floorDiv(nowMillis - START, tick);
      List<Long> fired = new ArrayList<>();
      while (!queue.isEmpty() && queue.peek().dueTick <= nowTick) {
        Timer timer = queue.poll();
        if (!timer.done) {
          timer.done = true;
          pending--;
          pendingByKind[timer.kind]--;
          fired.add(timer.id * TimeWheel.KIND_LIMIT + timer.kind);
        }
      }
      return fired;
    }
  }

  /** Collects fired ids by kind, the time they fired at, and checks every batch. */
  private static final class Recorder implements TimeWheel.DueSink {
    final List<Long> closes = new ArrayList<>();
    final List<Long> reminds = new ArrayList<>();
    final Map<Long, Long> firedAt = new HashMap<>();
    private long now;
    private int maxBatch;

    int advance(TimeWheel wheel, long nowMillis, int maxBatch) {
      this.now = nowMillis;
      this.maxBatch = maxBatch;
      return wheel.advance(nowMillis, maxBatch, this);
    }

    @Override
    public void due(byte kind, long[] ids, int count) {
      assertThat(count).isBetween(1, maxBatch);
      List<Long> target = kind == CLOSE ? closes : reminds;
      for (long id : Arrays.copyOf(ids, count)) {
        target.add(id);
        firedAt.putIfAbsent(id, now);
      }
    }
  }
}
