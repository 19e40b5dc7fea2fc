package ordertimeout.sweep;

import ordertimeout.bus.Addresses;
import ordertimeout.bus.DueOrders;
import ordertimeout.support.Await;
import ordertimeout.support.DueTap;
import ordertimeout.support.SeedOrders;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The sweep pages through each shard's overdue orders, then its overdue reminders, in keyset pages of
 * {@code sweep.pageSize} (3 here): a shard with several pages of orders sharing one deadline (the
 * keyset's tie broken by id), one whose last page is exactly full, one with a single order. Every order
 * is handed to the close path once, in full pages in one run per shard (one pass, not a page per pass),
 * and closed; every reminder sent once.
 *
 * <p>The orders are written behind the running node's back (not in its wheel), overdue past the
 * sweep's grace; what the sweep hands over is read off the node's event bus ({@link DueTap}).
 */
class SweepPagingTest extends ServiceTestBase {
  private static final String SKU = "SKU-SWEEP";
  private static final int PAGE = 3;
  private static final Duration SAFETY = Duration.ofSeconds(60);

  @Override
  protected Map<String, String> overrides() {
    return Map.of("OT_SWEEP_PAGE_SIZE", Integer.toString(PAGE));
  }

  @Test
  void everyOverdueOrderAndReminderIsSweptOnceInFullPagesPastTheFirst() {
    DueTap tap = DueTap.on(service.vertx());
    long[] tied = SeedOrders.idsInShard(20, 10);
    long[] fullPages = SeedOrders.idsInShard(21, 9);
    long[] single = SeedOrders.idsInShard(22, 1);
    long[] reminders = SeedOrders.idsInShard(23, 7);
    long sweptBefore = service.service().stats().timeoutCloses(DueOrders.Path.SWEEP);
    long remindedBefore = api.stats().getLong("remindersSent");

    SeedOrders.insert(SKU, tied, -60_000, 0, null);          // one deadline for all, a minute ago
    SeedOrders.insert(SKU, fullPages, -60_000, 1, null);     // three full pages, then an empty one
    SeedOrders.insert(SKU, single, -60_000, 0, null);
    SeedOrders.insert(SKU, reminders, 3_600_000, 0, 3_660_000L); // due in an hour, reminders a minute overdue, tied

    long[] closes = concat(tied, fullPages, single);
    Await.until("the sweep to close every overdue order and send every overdue reminder", SAFETY,
        () -> service.service().stats().timeoutCloses(DueOrders.Path.SWEEP) - sweptBefore == closes.length
            && api.stats().getLong("remindersSent") - remindedBefore == reminders.length);
    assertThat(Sql.count("SELECT count(*) FROM orders WHERE status = 'UNPAID' AND close_at < now()")).isZero();
    assertThat(Sql.count("SELECT count(*) FROM orders WHERE remind_at IS NOT NULL AND reminded_at IS NULL")).isZero();

    Map<Long, Integer> swept = tap.timesSent(Addresses.CLOSE_DUE, DueOrders.Path.SWEEP);
    assertThat(swept.keySet()).as("every overdue order handed to the close path").isEqualTo(set(closes));
    assertThat(swept.entrySet()).as("handed over more than once").filteredOn(e -> e.getValue() != 1).isEmpty();
    Map<Long, Integer> remindersSwept = tap.timesSent(Addresses.REMIND_DUE, DueOrders.Path.SWEEP);
    assertThat(remindersSwept.keySet()).as("every overdue reminder handed over").isEqualTo(set(reminders));
    assertThat(remindersSwept.entrySet()).filteredOn(e -> e.getValue() != 1).isEmpty();

    List<DueTap.Batch> closeBatches = tap.batches(Addresses.CLOSE_DUE, DueOrders.Path.SWEEP);
    assertThat(pageSizes(closeBatches, tied)).as("tied deadlines: pages past the first").containsExactly(3, 3, 3, 1);
    assertThat(pageSizes(closeBatches, fullPages)).containsExactly(3, 3, 3);
    assertThat(pageSizes(closeBatches, single)).containsExactly(1);
    assertThat(pageSizes(tap.batches(Addresses.REMIND_DUE, DueOrders.Path.SWEEP), reminders)).containsExactly(3, 3, 1);
    for (long[] shard : List.of(tied, fullPages, single)) {
      assertThat(consecutive(closeBatches, shard)).as("a shard's pages one after another, in one pass").isTrue();
    }
    assertThat(consecutive(tap.batches(Addresses.REMIND_DUE, DueOrders.Path.SWEEP), reminders)).isTrue();

    assertThat(service.service().stats().timeoutCloses(DueOrders.Path.SWEEP) - sweptBefore).isEqualTo(closes.length);
    assertThat(api.stats().getLong("remindersSent") - remindedBefore).isEqualTo(reminders.length);
    assertThat(Sql.count("SELECT count(*) FROM outbox WHERE type = 'ORDER_CLOSE_REMINDER'")).isEqualTo(reminders.length);
    assertThat(api.stock(SKU).getLong("reserved")).as("the reminded orders' units only").isEqualTo(reminders.length);
  }

  /** The sizes of the batches that hold ids of {@code shard}, in the order sent; each must hold only that shard's. */
  private static List<Integer> pageSizes(List<DueTap.Batch> batches, long[] shard) {
    Set<Long> ids = set(shard);
    List<Integer> sizes = new ArrayList<>();
    for (DueTap.Batch batch : batches) {
      long mine = Arrays.stream(batch.ids()).filter(ids::contains).count();
      if (mine > 0) {
        assertThat(mine).as("a page holds one shard's orders").isEqualTo(batch.ids().length);
        sizes.add(batch.ids().length);
      }
    }
    return sizes;
  }

  /** Whether the batches holding {@code shard}'s ids follow one another with no other batch between them. */
  private static boolean consecutive(List<DueTap.Batch> batches, long[] shard) {
    Set<Long> ids = set(shard);
    List<Integer> positions = new ArrayList<>();
    for (int i = 0; i < batches.size(); i++) {
      if (Arrays.stream(batches.get(i).ids()).anyMatch(ids::contains)) {
        positions.add(i);
      }
    }
    return positions.get(positions.size() - 1) - positions.get(0) == positions.size() - 1;
  }

  private static long[] concat(long[]... parts) {
    return Arrays.stream(parts).flatMapToLong(Arrays::stream).toArray();
  }

  private static Set<Long> set(long[] ids) {
    return Arrays.stream(ids).boxed().collect(Collectors.toSet());
  }
}
