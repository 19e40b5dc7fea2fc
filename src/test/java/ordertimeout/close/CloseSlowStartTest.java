package ordertimeout.close;

import io.vertx.core.json.JsonObject;
import ordertimeout.close.HeldCloses.ReportedCreates;
import ordertimeout.support.Sql;
import ordertimeout.support.Api;
import ordertimeout.support.Await;
import ordertimeout.support.ServiceTestBase;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static ordertimeout.close.HeldCloses.allowedCloses;
import static ordertimeout.close.HeldCloses.closesWaitingForStock;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A storm's first full batch from the wheel, while creates come in, starts the drain one close at a time; it grows by
 * one a second once creates are fast (close.yieldToCreatesAboveMillis). Without creates it starts at full width. Four
 * orders share one deadline, so the wheel hands them over as two full batches (timer.batchSize 2); their stock rows
 * are locked, so the closes running at once can be counted as the database's lock waiters.
 */
class CloseSlowStartTest extends ServiceTestBase {
  private static final int MAX_IN_FLIGHT = 2;

  /** The sweep stays out of the way (grace far beyond the test); a held close waits for its row as long as the test. */
  @Override
  protected Map<String, String> overrides() {
    return Map.of("OT_CLOSE_MAX_IN_FLIGHT", Integer.toString(MAX_IN_FLIGHT), "OT_TIMER_BATCH_SIZE", "2",
        "OT_CLOSE_YIELD_TO_CREATES_ABOVE_MILLIS", "50", "OT_SWEEP_GRACE_SECONDS", "120",
        "OT_DATABASE_DEADLINES_LOCK_TIMEOUT_MILLIS", "60000");
  }

  /**
   * The creates coming in are slow, so the closes stay at one however long the test takes to look; without the slow
   * start both batches would have started at once, before the first check could yield.
   */
  @Test
  void whileCreatesComeInAStormStartsWithOneCloseAndGrowsOnceTheyAreFast() throws Exception {
    ReportedCreates slow = new ReportedCreates(service.service().stats(), Duration.ofMillis(200));
    try (HeldStorm storm = new HeldStorm("LIVE")) {
      slow.start();
      storm.awaitDue();
      Await.sleep(1500);
      assertThat(closesWaitingForStock()).as("closes started since the storm's batches arrived, creates coming in").isEqualTo(1);
      assertThat(allowedCloses(api)).isEqualTo(1);

      slow.stopReporting();
      ReportedCreates fast = new ReportedCreates(service.service().stats(), Duration.ofMillis(5));
      fast.start();
      try {
        Await.until("a second close started once creates were fast", Duration.ofSeconds(10), () -> closesWaitingForStock() == 2);
        assertThat(allowedCloses(api)).isEqualTo(MAX_IN_FLIGHT);
      } finally {
        fast.stopReporting();
      }
    } finally {
      slow.stopReporting();
    }
  }

  /** The storm's own creates were answered seconds before its deadline. */
  @Test
  void withoutCreatesAStormStartsAtFullWidth() throws Exception {
    try (HeldStorm storm = new HeldStorm("QUIET")) {
      storm.awaitDue();
      Await.until("both closes started", Duration.ofSeconds(10), () -> closesWaitingForStock() == 2);
      assertThat(allowedCloses(api)).isEqualTo(MAX_IN_FLIGHT);
    }
  }

  /**
   * Four unpaid orders of four SKUs, created with 5 s, then all extended to one deadline a second after the last one's,
   * their stock rows locked until closed.
   */
  private final class HeldStorm implements AutoCloseable {
    private final List<String> ids = new ArrayList<>();
    private final List<Connection> locks = new ArrayList<>();
    private final Instant deadline;

    HeldStorm(String prefix) throws SQLException {
      Instant latest = Instant.EPOCH;
      for (int i = 0; i < 4; i++) {
        String sku = prefix + "-" + i;
        api.setStock(sku, 10);
        JsonObject order = create("u-" + prefix + i, 5, sku, 1);
        ids.add(order.getString("id"));
        latest = Instant.parse(order.getString("closeAt"));
        locks.add(Sql.connectionHoldingStock(sku));
      }
      deadline = latest.plusSeconds(2).truncatedTo(ChronoUnit.SECONDS);
      for (String id : ids) {
        Api.Response extended = api.extend(id, new JsonObject().put("closeAt", deadline.toString()));
        assertThat(extended.status()).as(extended.body()).isEqualTo(200);
      }
    }

    void awaitDue() {
      Await.until("every order overdue", Duration.ofSeconds(10),
          () -> Instant.now().isAfter(deadline.plusMillis(200)));
    }

    @Override
    public void close() throws Exception {
      for (Connection lock : locks) {
        lock.rollback();
        lock.close();
      }
      Await.until("the storm's orders closed", Duration.ofSeconds(10), () -> ids.stream().allMatch(id -> "CLOSED".equals(statusOf(id))));
    }
  }
}
