package ordertimeout.timer;

import io.vertx.core.Vertx;
import ordertimeout.bus.Addresses;
import ordertimeout.bus.DueOrders;
import ordertimeout.support.Await;
import ordertimeout.support.DueTap;
import ordertimeout.support.Invariants;
import ordertimeout.support.OwnNode;
import ordertimeout.support.SeedOrders;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.LongStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The start-up reload reads each shard's pending deadlines, then its unsent reminders, in keyset pages
 * of {@code timer.reloadPageSize} (100 here, the smallest allowed): with shards holding several pages,
 * a last page that is exactly full, and whole pages of orders sharing one deadline (the keyset's tie
 * broken by id), every timer is loaded once: the wheel fires each order's close, and each reminder,
 * exactly once, and closes them all itself.
 *
 * <p>What the wheel fires is read off the node's event bus ({@link DueTap}, set before the node
 * starts); the sweep's grace keeps the sweep away, so anything the reload skipped would stay unpaid.
 */
class ReloadPagingTest {
  private static final String SKU = "SKU-RELOAD";
  private static final int PAGE = 100;
  private static final Duration SAFETY = Duration.ofSeconds(120);

  @Test
  void everyPendingDeadlineAndReminderIsLoadedExactlyOnceAcrossPages() {
    TestDatabase.reset();
    // Due 10 s after the seeding (a slow start only makes them fire as soon as they are loaded).
    long[] tied = SeedOrders.idsInShard(7, 2 * PAGE + PAGE / 2);
    SeedOrders.insert(SKU, tied, 10_000, 0, 1000L);         // one deadline for all, one reminder time for all
    long[] fullPages = SeedOrders.idsInShard(9, 2 * PAGE);
    SeedOrders.insert(SKU, fullPages, 10_000, 7, null);      // two full pages, then an empty one; no reminders
    long[] few = SeedOrders.idsInShard(11, 5);
    SeedOrders.insert(SKU, few, 10_000, 3, 1000L);
    long[] closes = LongStream.concat(LongStream.concat(Arrays.stream(tied), Arrays.stream(fullPages)), Arrays.stream(few)).toArray();
    long[] reminders = LongStream.concat(Arrays.stream(tied), Arrays.stream(few)).toArray();

    Vertx vertx = Vertx.vertx();
    DueTap tap = DueTap.on(vertx);
    try (OwnNode node = OwnNode.start(vertx, TestDatabase.connectOptions(), Map.of(
        "OT_TIMER_RELOAD_PAGE_SIZE", Integer.toString(PAGE),
        "OT_SWEEP_GRACE_SECONDS", "3600"))) {
      Await.until("every seeded timer due and the wheel empty", SAFETY,
          () -> Sql.count("SELECT count(*) FROM orders WHERE close_at > now()") == 0
              && node.api().stats().getJsonObject("pendingTimers").getLong("total") == 0);

      Map<Long, Integer> closesFired = tap.timesSent(Addresses.CLOSE_DUE, DueOrders.Path.WHEEL);
      Map<Long, Integer> remindersFired = tap.timesSent(Addresses.REMIND_DUE, DueOrders.Path.WHEEL);
      assertThat(closesFired.keySet()).as("the wheel fired the close of every pending order: none skipped, nothing else")
          .isEqualTo(set(closes));
      assertThat(closesFired.entrySet()).as("closes fired more than once (loaded twice)").filteredOn(e -> e.getValue() != 1).isEmpty();
      assertThat(remindersFired.keySet()).as("the wheel fired every unsent reminder").isEqualTo(set(reminders));
      assertThat(remindersFired.entrySet()).as("reminders fired more than once").filteredOn(e -> e.getValue() != 1).isEmpty();

      Await.until("every order closed by the wheel", SAFETY,
          () -> node.service().stats().timeoutCloses(DueOrders.Path.WHEEL) == closes.length);
      assertThat(Sql.count("SELECT count(*) FROM orders WHERE status = 'UNPAID'")).isZero();
      assertThat(node.service().stats().timeoutCloses(DueOrders.Path.SWEEP)).isZero();
      assertThat(node.api().stock(SKU).getLong("reserved")).isZero();
      Invariants.assertHold();
    }
  }

  private static Set<Long> set(long[] ids) {
    return Arrays.stream(ids).boxed().collect(Collectors.toSet());
  }
}
