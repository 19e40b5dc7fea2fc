package ordertimeout.close;

import io.vertx.core.Future;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.Message;
import ordertimeout.bus.Addresses;
import ordertimeout.bus.DueOrders;
import ordertimeout.support.Await;
import ordertimeout.support.SeedOrders;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * One due order's row held by another transaction (an operator's open one) does not keep the rest of its close batch
 * open: once the batch's lock wait runs out, the others close without waiting for the row, and the held one closes
 * by itself soon after the row is released, once, with nothing given up.
 *
 * <p>The batch is handed to the close verticle on its own address, as the wheel does; the sweep's grace keeps the
 * sweep away from the test's orders.
 */
class HeldOrderRowTest extends ServiceTestBase {
  private static final String SKU = "SKU-ROW";
  private static final int ORDERS = 8;
  private static final Duration SAFETY = Duration.ofSeconds(60);

  @Override
  protected Map<String, String> overrides() {
    return Map.of(
        "OT_SWEEP_GRACE_SECONDS", "3600",
        "OT_DATABASE_DEADLINES_LOCK_TIMEOUT_MILLIS", "1000");
  }

  @Test
  void theOtherOrdersOfTheBatchCloseAndTheHeldOneClosesOnceReleased() throws Exception {
    long[] ids = SeedOrders.idsInShard(5, ORDERS);
    SeedOrders.insert(SKU, ids, -1000, 0, null);
    long held = ids[ORDERS / 2];
    long givenUpBefore = service.service().stats().closeBatchesGivenUp();

    try (Connection operator = TestDatabase.jdbc()) {
      operator.setAutoCommit(false);
      Sql.rows(operator, "SELECT id FROM orders WHERE id = ? FOR UPDATE", held);
      int closed = TestService.await(closeDue(ids)).body();
      assertThat(closed).as("every order but the held one").isEqualTo(ORDERS - 1);
      assertThat(Sql.count("SELECT count(*) FROM orders WHERE id = ANY(?) AND status = 'CLOSED'", (Object) boxed(ids)))
          .isEqualTo(ORDERS - 1);
      assertThat(Sql.count("SELECT count(*) FROM orders WHERE id = ? AND status = 'UNPAID'", held)).isEqualTo(1);
      Await.sleep(1_500); // its retry a second later finds the row still held, and waits for nothing
      assertThat(Sql.count("SELECT count(*) FROM orders WHERE id = ? AND status = 'UNPAID'", held)).isEqualTo(1);
      operator.rollback();
    }

    Await.until("the held order closed by itself once released", SAFETY,
        () -> Sql.count("SELECT count(*) FROM orders WHERE id = ? AND status = 'CLOSED'", held) == 1);
    assertThat(Sql.count("SELECT count(*) FROM order_log WHERE order_id = ANY(?) AND event = 'CLOSED'",
        (Object) boxed(ids))).as("each closed once").isEqualTo(ORDERS);
    assertThat(service.service().stats().closeBatchesGivenUp()).as("nothing given up").isEqualTo(givenUpBefore);
  }

  private Future<Message<Integer>> closeDue(long[] ids) {
    return service.vertx().eventBus().request(Addresses.CLOSE_DUE, new DueOrders(ids, DueOrders.Path.WHEEL),
        new DeliveryOptions().setSendTimeout(SAFETY.toMillis()));
  }

  private static Long[] boxed(long[] ids) {
    return Arrays.stream(ids).boxed().toArray(Long[]::new);
  }
}
