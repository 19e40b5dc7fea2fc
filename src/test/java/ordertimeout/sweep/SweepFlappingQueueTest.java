package ordertimeout.sweep;

import ordertimeout.bus.Addresses;
import ordertimeout.bus.DueOrders;
import ordertimeout.support.Await;
import ordertimeout.support.DueTap;
import ordertimeout.support.SeedOrders;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import ordertimeout.support.StockRowLock;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.stream.LongStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A queue of close batches that forms during every sweep pass and is gone at every tick does not keep an overdue
 * order from the sweep for longer than its bound: a pass stopped by the queue counts as left out until a pass reaches
 * its end, so the 13th pass at the latest goes through. Orders lost by the wheel (written behind the node's back) lie
 * in shard 0 and one in shard 63. In each pass the first page (one order of shard 0) waits on the locked SLOW row while
 * two wheel batches queue behind it; once let through, the first wheel batch waits on the locked HELD row and the
 * second stays queued, which a pass that may stop meets at its next page. The test locks the SLOW row again for the
 * next pass and lets the wheel batches through, so that the queue is empty when the next pass begins. With every pass
 * beginning anew (its count reset), each stopped in shard 0 and the order of shard 63 stayed unpaid.
 */
class SweepFlappingQueueTest extends ServiceTestBase {
  /** Passes watched: more than the bound's 13 (12 left out, then one that goes through). */
  private static final int PASSES = 20;
  private static final int BOUND = 13;
  private static final Duration WAIT = Duration.ofSeconds(10);
  private static final String RUNS = "ordertimeout_sweep_runs_seconds_count";
  private static final String SKIPPED = "ordertimeout_sweep_skipped_total";
  private static final String QUEUED = "ordertimeout_close_queued";

  /** One close at a time, wheel batches that cannot join, sweep pages of one order (the sweep: every second). */
  @Override
  protected Map<String, String> overrides() {
    return Map.of("OT_CLOSE_MAX_IN_FLIGHT", "1", "OT_CLOSE_YIELD_TO_CREATES_ABOVE_MILLIS", "0",
        "OT_DATABASE_DEADLINES_LOCK_TIMEOUT_MILLIS", "60000", "OT_TIMER_BATCH_SIZE", "1", "OT_SWEEP_PAGE_SIZE", "1");
  }

  @Test
  void anOrderInTheLastShardIsClosedWithinTheBoundWhileTheQueueFormsInEveryPass() {
    DueTap tap = DueTap.on(service.vertx());
    api.setStock("SLOW", 10);
    api.setStock("HELD", 10);
    long[] first = SeedOrders.idsInShard(0, PASSES + 4); // each stopped pass closes one: some left after all
    long last = SeedOrders.idsInShard(63, 1)[0];
    String lastId = Long.toString(last);

    long[] lost = LongStream.concat(Arrays.stream(first), LongStream.of(last)).toArray();
    SeedOrders.insert("SLOW", lost, 3_600_000, 0, null); // not due yet: no pass may take one before the row is locked

    StockRowLock slow = StockRowLock.hold("SLOW");
    int passes = 0;
    boolean wentThrough = false;
    try {
      Sql.execute("UPDATE orders SET close_at = close_at - interval '2 hours' WHERE id = ANY(?)",
          (Object) Arrays.stream(lost).boxed().toArray(Long[]::new));
      while (!wentThrough && passes < PASSES) {
        passes++;
        String pass = "pass " + passes + ": ";
        Await.until(pass + "its first page waiting for the SLOW row", WAIT,
            () -> StockRowLock.waitingBackends().size() == 1);
        double runs = metric(RUNS);
        double skipped = metric(SKIPPED);
        int pages = sweepPages(tap);
        long[] wheel = SeedOrders.idsInShard(1, 2);
        SeedOrders.insert("HELD", wheel, -60_000, 0, null);
        try (StockRowLock held = StockRowLock.hold("HELD")) {
          for (long id : wheel) {
            service.vertx().eventBus().send(Addresses.CLOSE_DUE, new DueOrders(new long[] {id}, DueOrders.Path.WHEEL));
          }
          Await.until(pass + "two wheel batches queued behind its page", WAIT, () -> metric(QUEUED) == 2);
          slow.close();
          slow = null;
          Await.until(pass + "stopped for the queue, or its next page handed over", WAIT,
              () -> metric(SKIPPED) > skipped || sweepPages(tap) > pages);
          wentThrough = sweepPages(tap) > pages;
          if (!wentThrough) {
            slow = StockRowLock.hold("SLOW"); // before the next tick: the next pass's first page waits on it
          }
        }
        Await.until(pass + "ended, the queue empty", WAIT, () -> metric(RUNS) > runs && metric(QUEUED) == 0);
      }
    } finally {
      if (slow != null) {
        slow.close();
      }
    }

    String lastStatus = statusOf(lastId);
    // without the queue, the sweep closes what is left (the invariants want nothing overdue)
    Await.until("every order closed", Duration.ofSeconds(30),
        () -> Sql.count("SELECT count(*) FROM orders WHERE status = 'UNPAID'") == 0);
    assertThat(lastStatus).as("the order of shard 63 after %d passes, each met by a queue (the bound: %d)",
        passes, BOUND).isEqualTo("CLOSED");
    assertThat(passes).as("the pass that went through").isLessThanOrEqualTo(BOUND);
    assertThat(tap.idsSent(Addresses.CLOSE_DUE, DueOrders.Path.SWEEP)).contains(last);
  }

  private static int sweepPages(DueTap tap) {
    return tap.batches(Addresses.CLOSE_DUE, DueOrders.Path.SWEEP).size();
  }
}
