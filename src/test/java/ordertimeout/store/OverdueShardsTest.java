package ordertimeout.store;

import io.vertx.core.Vertx;
import ordertimeout.store.DeadlineStore.OverdueShards;
import ordertimeout.store.DeadlineStore.PageCursor;
import ordertimeout.support.SeedOrders;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.HashSet;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The sweep's one look a pass ({@link DeadlineStore#shardsWithOverdue}) names exactly the shards whose pages of
 * overdue closes or reminders are not empty: past the grace, not held by a started payment, not parked, still unpaid,
 * the reminder not sent, and only among the shards asked about.
 */
class OverdueShardsTest {
  private static final String SKU = "SKU-OVERDUE";
  private static final int GRACE_SECONDS = 60;
  private static final int[] ASKED = {3, 4, 5, 6, 7, 8, 9};

  private Vertx vertx;
  private DeadlineStore store;

  @BeforeEach
  void start() {
    TestDatabase.reset();
    vertx = Vertx.vertx();
    store = TestDatabase.deadlineStore(vertx, 1);
  }

  @AfterEach
  void stop() {
    TestService.await(vertx.close());
    TestDatabase.reset();
  }

  @Test
  void theShardsNamedAreThoseWhosePagesFindOverdueClosesOrReminders() {
    SeedOrders.insert(SKU, SeedOrders.idsInShard(3, 1), -120_000, 0, null);   // overdue past the grace
    SeedOrders.insert(SKU, SeedOrders.idsInShard(4, 1), -10_000, 0, null);    // overdue, within the grace
    long[] parked = SeedOrders.idsInShard(5, 1);
    SeedOrders.insert(SKU, parked, -120_000, 0, null);
    Sql.execute("INSERT INTO close_failures (order_id, failures, first_failed_at, last_failed_at, last_error, "
        + "parked_at) VALUES (?, 3, now(), now(), 'lock timeout', now())", parked[0]);
    long[] held = SeedOrders.idsInShard(6, 1);
    SeedOrders.insert(SKU, held, -120_000, 0, null);
    Sql.execute("UPDATE orders SET hold_until = now() + interval '1 hour' WHERE id = ?", held[0]);
    long[] paid = SeedOrders.idsInShard(7, 1);
    SeedOrders.insert(SKU, paid, -120_000, 0, null);
    Sql.execute("UPDATE orders SET status = 'PAID', paid_at = now() WHERE id = ?", paid[0]);
    SeedOrders.insert(SKU, SeedOrders.idsInShard(8, 1), 3_600_000, 0, 3_720_000L); // its reminder 2 minutes late
    long[] reminded = SeedOrders.idsInShard(9, 1);
    SeedOrders.insert(SKU, reminded, 3_600_000, 0, 3_720_000L);
    Sql.execute("UPDATE orders SET reminded_at = now() WHERE id = ?", reminded[0]);
    SeedOrders.insert(SKU, SeedOrders.idsInShard(10, 1), -120_000, 0, 3_720_000L); // not asked about

    OverdueShards overdue = TestService.await(store.shardsWithOverdue(ASKED, GRACE_SECONDS));

    assertThat(overdue.closes()).as("shards with an overdue close").containsExactly(3);
    assertThat(overdue.reminders()).as("shards with an overdue reminder").containsExactly(8);
    Set<Integer> paged = new HashSet<>();
    Set<Integer> remindersPaged = new HashSet<>();
    for (int shard : ASKED) {
      if (TestService.await(store.overduePage(shard, GRACE_SECONDS, PageCursor.START, 10)).ids().length > 0) {
        paged.add(shard);
      }
      if (TestService.await(store.overdueRemindersPage(shard, GRACE_SECONDS, PageCursor.START, 10)).ids().length > 0) {
        remindersPaged.add(shard);
      }
    }
    assertThat(overdue.closes()).as("the shards whose page of closes is not empty").isEqualTo(paged);
    assertThat(overdue.reminders()).as("the shards whose page of reminders is not empty").isEqualTo(remindersPaged);
  }
}
