package ordertimeout.store;

import io.vertx.core.Vertx;
import ordertimeout.bus.Deadlines;
import ordertimeout.order.OrderIds;
import ordertimeout.support.SeedOrders;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What a node reads again for the shards it kept when another node left ({@link DeadlineStore#recentPendingPage}):
 * every unpaid order created after the given id in those shards, page by page, and nothing else; the close at the
 * later of deadline and hold, the reminder only while unsent.
 */
class RecentPendingPageTest {
  private static final String SKU = "SKU-RECENT";

  /** The seeded orders are not whole orders (one PAID without its pay): a later test's invariants would count them. */
  @AfterEach
  void leaveNoOrderBehind() {
    TestDatabase.reset();
  }

  @Test
  void readsEveryRecentUnpaidOrderOfTheKeptShardsWithItsTimers() throws Exception {
    TestDatabase.reset();
    long[] before = SeedOrders.idsInShard(3, 2);
    SeedOrders.insert(SKU, before, 60_000, 0, null);
    Thread.sleep(2);
    long floor = OrderIds.firstIdAt(System.currentTimeMillis()) - 1;
    Thread.sleep(2);
    long[] plain = SeedOrders.idsInShard(3, 5);          // more than a page: read across pages, none twice
    SeedOrders.insert(SKU, plain, 60_000, 1000, 10_000L);
    long[] held = SeedOrders.idsInShard(4, 1);
    long[] reminded = SeedOrders.idsInShard(4, 1);
    long[] paid = SeedOrders.idsInShard(4, 1);
    long[] otherShard = SeedOrders.idsInShard(5, 1);
    for (long[] ids : new long[][] {held, reminded, paid, otherShard}) {
      SeedOrders.insert(SKU, ids, 60_000, 0, 10_000L);
    }
    Sql.execute("UPDATE orders SET hold_until = close_at + interval '30 seconds' WHERE id = ?", held[0]);
    Sql.execute("UPDATE orders SET reminded_at = now() WHERE id = ?", reminded[0]);
    Sql.execute("UPDATE orders SET status = 'PAID', paid_at = now() WHERE id = ?", paid[0]);

    Map<Long, long[]> read = new HashMap<>();
    Vertx vertx = Vertx.vertx();
    try {
      DeadlineStore store = TestDatabase.deadlineStore(vertx, 2);
      long after = floor;
      int pages = 0;
      for (DeadlineStore.RecentPage page; ; after = page.lastId()) {
        page = TestService.await(store.recentPendingPage(new int[] {3, 4}, after, 2));
        pages++;
        Deadlines deadlines = page.deadlines();
        for (int i = 0; i < deadlines.size(); i++) {
          long[] timers = {deadlines.closeAtMillis()[i], deadlines.remindAtMillis()[i]};
          assertThat(read.put(deadlines.orderIds()[i], timers)).as("order %d read twice", deadlines.orderIds()[i]).isNull();
        }
        if (deadlines.size() < 2) {
          break;
        }
      }
      assertThat(pages).isEqualTo(4);
    } finally {
      TestService.await(vertx.close());
    }

    Map<Long, long[]> expected = new HashMap<>();
    for (long id : plain) {
      expected.put(id, new long[] {millis("close_at", id), millis("remind_at", id)});
    }
    expected.put(held[0], new long[] {millis("hold_until", held[0]), millis("remind_at", held[0])});
    expected.put(reminded[0], new long[] {millis("close_at", reminded[0]), Deadlines.NONE});
    assertThat(read.keySet()).as("recent unpaid orders of shards 3 and 4: not older ones, not paid ones, not shard 5's")
        .containsExactlyInAnyOrderElementsOf(expected.keySet());
    expected.forEach((id, timers) ->
        assertThat(read.get(id)).as("close and reminder of order %d", id).containsExactly(timers));
  }

  private static long millis(String column, long id) {
    return Sql.count("SELECT (extract(epoch FROM " + column + ") * 1000)::bigint FROM orders WHERE id = ?", id);
  }
}
