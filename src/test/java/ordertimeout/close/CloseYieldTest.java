package ordertimeout.close;

import ordertimeout.metrics.NodeStats;
import ordertimeout.support.Await;
import ordertimeout.support.Prometheus;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * While close batches queue and creates are slow, closes yield (close.yieldToCreatesAboveMillis): the close
 * transactions allowed at once fall to one, never to none, and grow back once creates are fast again. Three closes, one
 * batch each, are held on locked stock rows, so the closes running at once can be counted as the database's lock waiters.
 */
class CloseYieldTest extends ServiceTestBase {
  private static final int MAX_IN_FLIGHT = 2;

  /** The sweep stays out of the way (grace far beyond the test); a held close waits for its row as long as the test. */
  @Override
  protected Map<String, String> overrides() {
    return Map.of("OT_CLOSE_MAX_IN_FLIGHT", Integer.toString(MAX_IN_FLIGHT), "OT_CLOSE_YIELD_TO_CREATES_ABOVE_MILLIS", "50",
        "OT_SWEEP_GRACE_SECONDS", "120", "OT_DATABASE_DEADLINES_LOCK_TIMEOUT_MILLIS", "60000");
  }

  @Test
  void closesQueuedWhileCreatesAreSlowRunOneAtATimeAndTheRestStartOnceCreatesAreFast() throws Exception {
    String[] skus = {"HELD-A", "HELD-B", "HELD-C"};
    String[] ids = new String[skus.length];
    for (int i = 0; i < skus.length; i++) {
      api.setStock(skus[i], 10);
      ids[i] = create("u-" + i, 3, skus[i], 1).getString("id");
      Await.sleep(50); // due a few wheel ticks apart: a batch each
    }
    SlowCreates slowCreates = new SlowCreates(service.service().stats());
    try (Connection holdsA = lockedRow("HELD-A"); Connection holdsB = lockedRow("HELD-B"); Connection holdsC = lockedRow("HELD-C")) {
      assertThat(allowedCloses()).as("closes allowed at once before the backlog").isEqualTo(MAX_IN_FLIGHT);
      slowCreates.start();
      Await.until("every order overdue", Duration.ofSeconds(10), () -> Sql.count(
          "SELECT count(*) FROM orders WHERE close_at < now() - interval '200 milliseconds'") == skus.length);
      // A and B hold both places, C queues: a backlog while creates are slow.
      Await.until("closes allowed at once down to one", Duration.ofSeconds(10), () -> allowedCloses() == 1);
      assertThat(closesWaitingForStock()).as("A and B started before the backlog").isEqualTo(2);

      holdsA.rollback();
      Await.until("A closed", Duration.ofSeconds(10), () -> "CLOSED".equals(statusOf(ids[0])));
      Await.sleep(1500);
      assertThat(closesWaitingForStock()).as("closes running while creates are slow: B alone, C still queued").isEqualTo(1);

      slowCreates.interrupt();
      slowCreates.join();
      Await.until("C started once creates were fast", Duration.ofSeconds(10), () -> closesWaitingForStock() == 2);
      holdsB.rollback();
      holdsC.rollback();
      Await.until("B and C closed", Duration.ofSeconds(10), () -> "CLOSED".equals(statusOf(ids[1])) && "CLOSED".equals(statusOf(ids[2])));
      Await.until("closes allowed at once back to close.maxInFlight", Duration.ofSeconds(10), () -> allowedCloses() == MAX_IN_FLIGHT);
    } finally {
      slowCreates.interrupt();
    }
  }

  /** A connection whose open transaction holds {@code sku}'s inventory row; rollback (or close) lets it go. */
  private static Connection lockedRow(String sku) throws SQLException {
    Connection connection = TestDatabase.jdbc();
    connection.setAutoCommit(false);
    Sql.rows(connection, "SELECT * FROM inventory WHERE sku = ? FOR UPDATE", sku);
    return connection;
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
