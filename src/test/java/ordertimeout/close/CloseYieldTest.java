package ordertimeout.close;

import ordertimeout.metrics.NodeStats;
import ordertimeout.support.Await;
import ordertimeout.support.Prometheus;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * While creates are slow, closes yield (close.yieldToCreatesAboveMillis): the close transactions allowed at once fall
 * to one, never to none, and grow back once creates are fast again. Two closes are held on locked stock rows, so the
 * closes running at once can be counted as the database's lock waiters.
 */
class CloseYieldTest extends ServiceTestBase {
  private static final int MAX_IN_FLIGHT = 4;

  /** The sweep stays out of the way (grace far beyond the test). */
  @Override
  protected Map<String, String> overrides() {
    return Map.of("OT_CLOSE_MAX_IN_FLIGHT", Integer.toString(MAX_IN_FLIGHT), "OT_CLOSE_YIELD_TO_CREATES_ABOVE_MILLIS", "50",
        "OT_SWEEP_GRACE_SECONDS", "120");
  }

  @Test
  void whileCreatesAreSlowOneCloseRunsAtATimeAndTheOthersStartOnceCreatesAreFast() throws Exception {
    api.setStock("HELD-A", 10);
    api.setStock("HELD-B", 10);
    assertThat(allowedCloses()).as("closes allowed at once before any create").isEqualTo(MAX_IN_FLIGHT);
    SlowCreates slowCreates = new SlowCreates(service.service().stats());
    slowCreates.start();
    try (Connection blocker = TestDatabase.jdbc(); Statement statement = blocker.createStatement()) {
      Await.until("closes allowed at once down to one", Duration.ofSeconds(10), () -> allowedCloses() == 1);
      String first = create("u-a", 2, "HELD-A", 1).getString("id");
      Await.sleep(50); // due a few wheel ticks later: a batch of its own
      String second = create("u-b", 2, "HELD-B", 1).getString("id");
      blocker.setAutoCommit(false);
      statement.execute("SELECT * FROM inventory WHERE sku IN ('HELD-A', 'HELD-B') FOR UPDATE"); // before they are due
      Await.until("both orders overdue", Duration.ofSeconds(10), () -> Sql.count(
          "SELECT count(*) FROM orders WHERE close_at < now() - interval '500 milliseconds'") == 2);
      assertThat(closesWaitingForStock()).as("closes running at once while creates are slow").isEqualTo(1);

      slowCreates.interrupt();
      slowCreates.join();
      Await.until("the second close started once creates were fast", Duration.ofSeconds(10), () -> closesWaitingForStock() == 2);
      assertThat(allowedCloses()).as("closes allowed at once after fast creates").isGreaterThan(1);
      blocker.rollback();

      Await.until("both orders closed", Duration.ofSeconds(10), () -> "CLOSED".equals(statusOf(first)) && "CLOSED".equals(statusOf(second)));
      Await.until("closes allowed at once back to close.maxInFlight", Duration.ofSeconds(10), () -> allowedCloses() == MAX_IN_FLIGHT);
    } finally {
      slowCreates.interrupt();
    }
  }

  private double allowedCloses() {
    return new Prometheus(api.get("/metrics", null).body()).sum("ordertimeout_close_concurrency");
  }

  /** Sessions waiting on a lock: here, only the closes held by the locked stock rows. */
  private static long closesWaitingForStock() {
    return Sql.count("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()");
  }

  /** Reports a create answered after 200 ms every 20 ms, as intake would while the database is busy. */
  private static final class SlowCreates extends Thread {
    private final NodeStats stats;

    SlowCreates(NodeStats stats) {
      super("slow-creates");
      this.stats = stats;
      setDaemon(true);
    }

    @Override
    public void run() {
      while (!isInterrupted()) {
        stats.createAnswered(201, TimeUnit.MILLISECONDS.toNanos(200));
        try {
          Thread.sleep(20);
        } catch (InterruptedException stop) {
          return;
        }
      }
    }
  }
}
