package ordertimeout.close;

import ordertimeout.support.Await;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Batches from the wheel that queue while every close place is taken join into one transaction when
 * a place frees up, and every order of them still closes exactly once, never early, its stock back.
 */
class CloseBacklogTest extends ServiceTestBase {
  private static final int QUEUED_ORDERS = 20;

  /** One close transaction at a time; the sweep stays out of the way (grace far beyond the test). */
  @Override
  protected Map<String, String> overrides() {
    return Map.of("OT_CLOSE_MAX_IN_FLIGHT", "1", "OT_SWEEP_GRACE_SECONDS", "120");
  }

  @Test
  void queuedWheelBatchesCloseInOneTransaction() throws Exception {
    api.setStock("HELD", 10);
    api.setStock("OTHER", 100);
    String first = create("u-first", 1, "HELD", 1).getString("id");
    try (Connection blocker = TestDatabase.jdbc()) {
      Sql.holdStock(blocker, "HELD");

      // The first close takes the only place and waits for HELD's stock; the others queue, a tick apart.
      List<Long> queued = new ArrayList<>();
      for (int i = 0; i < QUEUED_ORDERS; i++) {
        queued.add(Long.parseLong(create("u-" + i, 2, "OTHER", 1).getString("id")));
        Await.sleep(30);
      }
      Long[] ids = queued.toArray(Long[]::new);
      Await.until("every queued order overdue", Duration.ofSeconds(10), () ->
          Sql.count("SELECT count(*) FROM orders WHERE id = ANY(?) AND close_at < now() - interval '300 milliseconds'",
              (Object) ids) == QUEUED_ORDERS);
      assertThat(Sql.count("SELECT count(*) FROM orders WHERE status = 'CLOSED'")).as("all wait behind the first").isZero();
      assertThat(Sql.count("SELECT count(DISTINCT date_trunc('milliseconds', close_at)) FROM orders WHERE id = ANY(?)",
          (Object) ids)).as("due at different moments, so fired in separate batches").isGreaterThan(QUEUED_ORDERS / 2);

      blocker.rollback();

      Await.until("every order closed", Duration.ofSeconds(10),
          () -> Sql.count("SELECT count(*) FROM orders WHERE status = 'CLOSED'") == QUEUED_ORDERS + 1);
      assertThat(statusOf(first)).isEqualTo("CLOSED");
      assertThat(Sql.count("SELECT count(DISTINCT xmin::text) FROM orders WHERE id = ANY(?)", (Object) ids))
          .as("the queued batches closed in one transaction").isEqualTo(1);
      assertThat(Sql.count("SELECT count(*) FROM orders WHERE id = ANY(?) AND close_reason = 'TIMEOUT' AND closed_at >= close_at",
          (Object) ids)).isEqualTo(QUEUED_ORDERS);
      assertThat(Sql.count("SELECT count(*) FROM order_log WHERE event = 'CLOSED'")).isEqualTo(QUEUED_ORDERS + 1);
      assertThat(api.stock("OTHER").getLong("reserved")).isZero();
      assertThat(api.stock("OTHER").getLong("available")).isEqualTo(100);
    }
  }
}
