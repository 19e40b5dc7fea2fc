package ordertimeout.sweep;

import ordertimeout.bus.Addresses;
import ordertimeout.bus.CancelTimers;
import ordertimeout.bus.DueOrders;
import ordertimeout.support.Await;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * While close batches queue on the node, the sweep leaves its passes out (its pages would only wait behind them) and
 * finds nothing; once the queue is empty it closes what the wheel lost. One close is held on a locked stock row with one
 * place for closes, so a second batch queues; a third order's timer is lost (the sweep's to close).
 */
class SweepBehindBacklogTest extends ServiceTestBase {

  /** One close at a time; a held close waits for its row as long as the test (the sweep: every second, 1 s of grace). */
  @Override
  protected Map<String, String> overrides() {
    return Map.of("OT_CLOSE_MAX_IN_FLIGHT", "1", "OT_CLOSE_YIELD_TO_CREATES_ABOVE_MILLIS", "0",
        "OT_DATABASE_DEADLINES_LOCK_TIMEOUT_MILLIS", "60000");
  }

  @Test
  void theSweepWaitsForTheQueueOfCloseBatchesThenClosesWhatTheWheelLost() throws Exception {
    api.setStock("HELD", 10);
    api.setStock("OTHER", 10);
    api.setStock("SKU-L", 10);
    String held = create("u-held", 3, "HELD", 1).getString("id");
    Await.sleep(50); // due a few wheel ticks later: a batch of its own
    String queued = create("u-queued", 3, "OTHER", 1).getString("id");
    String lost = create("u-lost", 3, "SKU-L", 1).getString("id");
    service.vertx().eventBus().send(Addresses.TIMER_CANCEL, CancelTimers.one(Long.parseLong(lost)));

    try (Connection blocker = Sql.connectionHoldingStock("HELD")) {
      Await.until("a close batch queued behind the held one", Duration.ofSeconds(10), () -> metric("ordertimeout_close_queued") == 1);
      double foundBefore = metric("ordertimeout_sweep_found_total");
      double skippedBefore = metric("ordertimeout_sweep_skipped_total");
      Await.until("the lost order overdue past the sweep's grace", Duration.ofSeconds(10), () -> Sql.count(
          "SELECT count(*) FROM orders WHERE id = ? AND close_at < now() - interval '1500 milliseconds'", Long.parseLong(lost)) == 1);
      Await.sleep(2500); // two more passes due
      assertThat(metric("ordertimeout_sweep_skipped_total") - skippedBefore).as("sweep passes left out").isGreaterThanOrEqualTo(2);
      assertThat(metric("ordertimeout_sweep_found_total") - foundBefore).as("overdue orders the sweep found meanwhile").isZero();
      assertThat(statusOf(lost)).isEqualTo("UNPAID");
      blocker.rollback();
    }

    Await.until("the queue's orders closed by the wheel", Duration.ofSeconds(10),
        () -> "CLOSED".equals(statusOf(held)) && "CLOSED".equals(statusOf(queued)));
    Await.until("the lost order closed by the sweep", Duration.ofSeconds(10), () -> "CLOSED".equals(statusOf(lost)));
    assertThat(service.service().stats().timeoutCloses(DueOrders.Path.SWEEP)).isEqualTo(1);
    assertThat(metric("ordertimeout_close_queued")).isZero();
  }
}
