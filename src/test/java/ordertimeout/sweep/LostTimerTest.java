package ordertimeout.sweep;

import io.vertx.core.json.JsonObject;
import ordertimeout.bus.Addresses;
import ordertimeout.bus.CancelTimers;
import ordertimeout.bus.DueOrders;
import ordertimeout.support.Await;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A timer that never reaches the wheel (a timer message lost on its way to the shard's owner) costs
 * only speed: the sweep sends the reminder and closes the order.
 */
class LostTimerTest extends ServiceTestBase {

  @Override
  protected Map<String, String> overrides() {
    return Map.of("OT_ORDERS_REMINDER_BEFORE_SECONDS", "6");
  }

  @Test
  void theSweepSendsTheReminderAndClosesAnOrderWhoseTimersWereLost() {
    api.setStock("SKU-L", 10);
    JsonObject order = create("u-lost", 9, "SKU-L", 2); // reminder due at +3 s, deadline at +9 s
    long id = Long.parseLong(order.getString("id"));
    service.vertx().eventBus().send(Addresses.TIMER_CANCEL, CancelTimers.one(id));

    Await.until("the reminder sent by the sweep", Duration.ofSeconds(8),
        () -> Sql.count("SELECT count(*) FROM outbox WHERE type = 'ORDER_CLOSE_REMINDER' AND order_id = ?", id) == 1);
    assertThat(statusOf(order.getString("id"))).isEqualTo("UNPAID");

    Await.until("the order closed by the sweep", Duration.ofSeconds(12), () -> statusOf(order.getString("id")).equals("CLOSED"));
    assertThat(service.service().stats().timeoutCloses(DueOrders.Path.SWEEP)).isEqualTo(1);
    assertThat(api.stock("SKU-L").getLong("reserved")).isZero();
  }
}
