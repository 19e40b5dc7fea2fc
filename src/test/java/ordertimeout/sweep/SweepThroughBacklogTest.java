package ordertimeout.sweep;

import ordertimeout.bus.Addresses;
import ordertimeout.bus.DueOrders;
import ordertimeout.support.Await;
import ordertimeout.support.DueTap;
import ordertimeout.support.SeedOrders;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The pass that goes through a lasting backlog of close batches (the one after twelve left out) takes only the orders
 * that were overdue before the oldest queued batch was queued: the orders due since are most likely in the queue. One
 * close waits on a locked stock row with one place for closes, so a second batch queues; then two orders are written
 * behind the node's back (lost by the wheel), one due long before the queue formed and one due after it. The pass
 * through the backlog must hand the first and none of the others; a pass after the backlog hands the second.
 */
class SweepThroughBacklogTest extends ServiceTestBase {

  /** One close at a time; a held close waits for its row as long as the test (the sweep: every second, 1 s of grace). */
  @Override
  protected Map<String, String> overrides() {
    return Map.of("OT_CLOSE_MAX_IN_FLIGHT", "1", "OT_CLOSE_YIELD_TO_CREATES_ABOVE_MILLIS", "0",
        "OT_DATABASE_DEADLINES_LOCK_TIMEOUT_MILLIS", "60000");
  }

  @Test
  void aPassThroughTheBacklogTakesOnlyWhatWasOverdueBeforeItsOldestBatchQueued() throws Exception {
    DueTap tap = DueTap.on(service.vertx());
    api.setStock("HELD", 10);
    api.setStock("OTHER", 10);
    api.setStock("LOST", 10);
    long held = Long.parseLong(create("u-held", 3, "HELD", 1).getString("id"));
    Await.sleep(50); // due a few wheel ticks later: a batch of its own
    long queued = Long.parseLong(create("u-queued", 3, "OTHER", 1).getString("id"));
    long overdueBefore = SeedOrders.idsInShard(5, 1)[0];
    long dueAfter = SeedOrders.idsInShard(6, 1)[0];

    try (Connection blocker = Sql.connectionHoldingStock("HELD")) {
      Await.until("a close batch queued behind the held one", Duration.ofSeconds(10),
          () -> metric("ordertimeout_close_queued") == 1);
      SeedOrders.insert("LOST", new long[] {overdueBefore}, -60_000, 0, null);
      SeedOrders.insert("LOST", new long[] {dueAfter}, 2_000, 0, null);
      Await.until("the pass through the backlog handed a page to the queue", Duration.ofSeconds(30),
          () -> metric("ordertimeout_close_queued") == 2);
      assertThat(tap.idsSent(Addresses.CLOSE_DUE, DueOrders.Path.SWEEP)).as("what the pass handed")
          .containsExactly(overdueBefore);
      blocker.rollback();
    }

    Await.until("every order closed", Duration.ofSeconds(30),
        () -> Sql.count("SELECT count(*) FROM orders WHERE status = 'UNPAID'") == 0);
    assertThat(tap.idsSent(Addresses.CLOSE_DUE, DueOrders.Path.SWEEP)).as("what the sweep handed, in order")
        .containsExactly(overdueBefore, dueAfter);
    assertThat(tap.idsSent(Addresses.CLOSE_DUE, DueOrders.Path.WHEEL)).containsExactlyInAnyOrder(held, queued);
    assertThat(service.service().stats().timeoutCloses(DueOrders.Path.SWEEP)).isEqualTo(2);
  }
}
