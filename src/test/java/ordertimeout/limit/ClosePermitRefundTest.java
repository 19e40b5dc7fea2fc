package ordertimeout.limit;

import io.vertx.core.eventbus.DeliveryOptions;
import ordertimeout.bus.Addresses;
import ordertimeout.bus.DueOrders;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The close permits of ids a batch did not close go back to the bucket: a sweep page of orders the wheel closed
 * already does not hold back the next closes.
 */
class ClosePermitRefundTest extends ServiceTestBase {
  @Override
  protected Map<String, String> overrides() {
    return Map.of(
        "OT_LIMITS_CLOSES_PER_SECOND", "1",
        "OT_LIMITS_CLOSES_BURST", "5",
        "OT_SWEEP_GRACE_SECONDS", "3600"); // the batches below are the only closes
  }

  @Test
  void permitsOfIdsNotClosedGoBackToTheBucket() {
    api.setStock("SKU-R", 100);
    long[] gone = {1, 2, 3, 4, 5};
    assertThat(closeDue(gone)).as("no such orders: the whole burst asked for, nothing closed").isZero();

    long[] due = new long[5];
    for (int i = 0; i < due.length; i++) {
      due[i] = 3000L + i;
      Sql.execute("""
          WITH o AS (INSERT INTO orders (id, shard, client, user_id, category, status, created_at, close_at)
                     VALUES (?, 0, 'dev-user', 'u', 'physical', 'UNPAID', now(), now() - interval '1 second')
                     RETURNING id)
          INSERT INTO order_items (order_id, sku, qty) SELECT id, 'SKU-R', 1 FROM o""", due[i]);
    }
    Sql.execute("UPDATE inventory SET available = available - 5, reserved = reserved + 5 WHERE sku = 'SKU-R'");
    long start = System.nanoTime();
    assertThat(closeDue(due)).isEqualTo(5);
    assertThat(Duration.ofNanos(System.nanoTime() - start))
        .as("the burst given back: not 5 s for 5 permits at 1 a second")
        .isLessThan(Duration.ofMillis(2500));
  }

  private int closeDue(long[] ids) {
    return TestService.await(service.vertx().eventBus().<Integer>request(Addresses.CLOSE_DUE,
        new DueOrders(ids, DueOrders.Path.SWEEP), new DeliveryOptions().setSendTimeout(30_000))).body();
  }
}
