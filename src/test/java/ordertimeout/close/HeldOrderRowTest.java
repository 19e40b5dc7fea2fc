package ordertimeout.close;

import ordertimeout.support.Await;
import ordertimeout.support.SeedOrders;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * One due order's row held by another transaction (an operator's open one) does not keep the rest of its close batch
 * open: once the batch's lock wait runs out, the others close without waiting for the row; the sweep brings the held
 * one back every pass without waiting for its row again, and it closes, once, soon after the row is released. Nothing
 * is given up. The orders are written straight into the database, not into the wheel: the sweep closes them.
 */
class HeldOrderRowTest extends ServiceTestBase {
  private static final String SKU = "SKU-ROW";
  private static final int ORDERS = 8;
  private static final Duration SAFETY = Duration.ofSeconds(30);
  /** A close batch's statement waiting for a lock (the held row's), not any other session of the shared database. */
  private static final String CLOSE_WAITING = """
      SELECT count(*) FROM pg_stat_activity
      WHERE wait_event_type = 'Lock' AND query LIKE '%close_due_orders(%' AND pid <> pg_backend_pid()""";

  @Override
  protected Map<String, String> overrides() {
    return Map.of(
        "OT_SWEEP_INTERVAL_SECONDS", "1",
        "OT_SWEEP_GRACE_SECONDS", "1",
        "OT_DATABASE_DEADLINES_LOCK_TIMEOUT_MILLIS", "1000");
  }

  @Test
  void theOtherOrdersOfItsBatchCloseAndTheHeldOneClosesOnceReleased() throws Exception {
    long[] ids = SeedOrders.idsInShard(5, ORDERS);
    long held = ids[ORDERS / 2];
    long givenUpBefore = service.service().stats().closeBatchesGivenUp();

    try (Connection operator = TestDatabase.jdbc()) {
      SeedOrders.insert(SKU, ids, -100, 0, null);
      operator.setAutoCommit(false);
      Sql.rows(operator, "SELECT id FROM orders WHERE id = ? FOR UPDATE", held);
      Await.until("the other orders closed while the row is held", SAFETY, () -> Sql.count(
          "SELECT count(*) FROM orders WHERE id = ANY(?) AND status = 'CLOSED'", (Object) boxed(ids)) == ORDERS - 1);
      assertThat(Sql.count("SELECT count(*) FROM orders WHERE id = ? AND status = 'UNPAID'", held)).isEqualTo(1);
      // three more sweep passes bring it back; none waits for its row
      for (int look = 0; look < 15; look++) {
        assertThat(Sql.count(CLOSE_WAITING)).as("a wait for the held row").isZero();
        Await.sleep(200);
      }
      assertThat(Sql.count("SELECT count(*) FROM orders WHERE id = ? AND status = 'UNPAID'", held)).isEqualTo(1);
      operator.rollback();
    }

    Await.until("the held order closed by the sweep once released", SAFETY,
        () -> Sql.count("SELECT count(*) FROM orders WHERE id = ? AND status = 'CLOSED'", held) == 1);
    assertThat(Sql.count("SELECT count(*) FROM order_log WHERE order_id = ANY(?) AND event = 'CLOSED'",
        (Object) boxed(ids))).as("each closed once").isEqualTo(ORDERS);
    assertThat(service.service().stats().closeBatchesGivenUp()).as("nothing given up").isEqualTo(givenUpBefore);
  }

  private static Long[] boxed(long[] ids) {
    return Arrays.stream(ids).boxed().toArray(Long[]::new);
  }
}
