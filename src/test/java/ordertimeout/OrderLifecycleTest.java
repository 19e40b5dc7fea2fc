package ordertimeout;

import io.vertx.core.json.JsonObject;
import ordertimeout.order.OrderIds;
import ordertimeout.support.Await;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;

import static org.assertj.core.api.Assertions.assertThat;

class OrderLifecycleTest extends ServiceTestBase {

  @Test
  void unpaidOrderIsRemindedThenClosedOnTimeWithItsStockBack() {
    api.setStock("SKU-1", 10);
    api.setStock("SKU-2", 5);
    JsonObject order = create("u-1", 3, "SKU-1", 2, "SKU-2", 5);
    String id = order.getString("id");
    assertThat(order.getString("status")).isEqualTo("UNPAID");
    assertThat(order.getString("category")).isEqualTo("physical");
    assertThat(order.getString("remindAt")).as("reminder 1 s before the 3 s deadline").isNotNull();
    assertThat(api.stock("SKU-1").getLong("available")).isEqualTo(8);
    assertThat(api.stock("SKU-1").getLong("reserved")).isEqualTo(2);
    assertThat(api.stock("SKU-2").getLong("available")).isZero();

    Await.until("the reminder", Duration.ofSeconds(5),
        () -> Sql.count("SELECT count(*) FROM outbox WHERE order_id = ? AND type = 'ORDER_CLOSE_REMINDER'", Long.parseLong(id)) == 1);
    assertThat(statusOf(id)).as("reminded, still open").isEqualTo("UNPAID");

    Await.until("the timeout close", Duration.ofSeconds(5), () -> statusOf(id).equals("CLOSED"));
    JsonObject closed = api.order(id).json();
    assertThat(closed.getString("closeReason")).isEqualTo("TIMEOUT");
    Instant closeAt = Instant.parse(closed.getString("closeAt"));
    Instant closedAt = Instant.parse(closed.getString("closedAt"));
    assertThat(closedAt).as("never early").isAfterOrEqualTo(closeAt);
    assertThat(Duration.between(closeAt, closedAt)).as("closed at its deadline").isLessThan(Duration.ofSeconds(1));
    assertThat(api.stock("SKU-1").getLong("available")).isEqualTo(10);
    assertThat(api.stock("SKU-1").getLong("reserved")).isZero();
    assertThat(api.stock("SKU-2").getLong("available")).isEqualTo(5);
    assertThat(Sql.count("SELECT count(*) FROM order_log WHERE order_id = ?", Long.parseLong(id)))
        .as("created, reminded, closed").isEqualTo(3);
    assertThat(Sql.count("SELECT count(*) FROM outbox WHERE order_id = ? AND type = 'ORDER_CLOSE_REMINDER'", Long.parseLong(id)))
        .as("at most one reminder").isEqualTo(1);
  }

  @Test
  void categoryPolicyDecidesTheDeadlineWhenNoTimeoutIsGiven() {
    api.setStock("SKU-1", 10);
    JsonObject body = new JsonObject().put("userId", "u-1").put("category", "virtual")
        .put("items", new io.vertx.core.json.JsonArray().add(new JsonObject().put("sku", "SKU-1").put("qty", 1)));
    JsonObject order = api.createOrder("cat-1", body).json();
    Duration timeout = Duration.between(Instant.parse(order.getString("createdAt")), Instant.parse(order.getString("closeAt")));
    assertThat(timeout).isEqualTo(Duration.ofSeconds(300));
    JsonObject physical = create("u-1", 1800, "SKU-1", 1);
    assertThat(Duration.between(Instant.parse(physical.getString("createdAt")), Instant.parse(physical.getString("closeAt"))))
        .isEqualTo(Duration.ofSeconds(1800));
  }

  @Test
  void paidOrderIsNeverClosedAndItsReservationBecomesASale() {
    api.setStock("SKU-1", 10);
    String id = create("u-1", 2, "SKU-1", 3).getString("id");
    var paid = api.pay(id);
    assertThat(paid.status()).isEqualTo(200);
    assertThat(paid.json().getString("status")).isEqualTo("PAID");
    assertThat(paid.json().getString("paidAt")).isNotNull();
    assertThat(api.pay(id).json()).as("paying again answers the same").isEqualTo(paid.json());

    sleep(Duration.ofMillis(3000));
    assertThat(statusOf(id)).isEqualTo("PAID");
    assertThat(api.stock("SKU-1").getLong("available")).as("sold, not given back").isEqualTo(7);
    assertThat(api.stock("SKU-1").getLong("reserved")).isZero();
    assertThat(api.cancel(id).code()).isEqualTo("order_paid");
    assertThat(api.adminClose(id).status()).isEqualTo(409);
    assertThat(api.adminClose(id).code()).isEqualTo("order_paid");
  }

  /**
   * The wheel is the service's for the whole class and keeps the timers of earlier tests' orders (the database is
   * emptied between tests, the wheel is not), so this looks at the cancelled order's shard only: its count goes up by
   * the order's two timers (deadline and reminder) and back down by them.
   */
  @Test
  void cancelClosesAtOnceAndGivesTheStockBack() {
    api.setStock("SKU-1", 10);
    long[] pendingBefore = service.service().stats().snapshot().pendingTimersByShard();
    String id = create("u-1", 600, "SKU-1", 4).getString("id");
    int shard = OrderIds.shardOf(Long.parseLong(id), service.config().database().shards());
    Await.until("the order's deadline and reminder in the wheel", Duration.ofSeconds(5),
        () -> pendingTimersOf(shard) == pendingBefore[shard] + 2);
    var cancelled = api.cancel(id);
    assertThat(cancelled.status()).isEqualTo(200);
    assertThat(cancelled.json().getString("status")).isEqualTo("CLOSED");
    assertThat(cancelled.json().getString("closeReason")).isEqualTo("USER_CANCELLED");
    assertThat(api.cancel(id).json()).as("cancelling again answers the same").isEqualTo(cancelled.json());
    assertThat(api.stock("SKU-1").getLong("available")).isEqualTo(10);
    var pay = api.pay(id);
    assertThat(pay.status()).isEqualTo(409);
    assertThat(pay.code()).isEqualTo("order_closed");
    Await.until("the cancelled order's timers to leave the wheel", Duration.ofSeconds(5),
        () -> pendingTimersOf(shard) == pendingBefore[shard]);
  }

  private long pendingTimersOf(int shard) {
    return service.service().stats().snapshot().pendingTimersByShard()[shard];
  }

  @Test
  void adminCloseClosesWithReasonAdmin() {
    api.setStock("SKU-1", 10);
    String id = create("u-1", 600, "SKU-1", 1).getString("id");
    var closed = api.adminClose(id);
    assertThat(closed.status()).isEqualTo(200);
    assertThat(closed.json().getString("closeReason")).isEqualTo("ADMIN");
    assertThat(api.stock("SKU-1").getLong("available")).isEqualTo(10);
    assertThat(api.adminClose("12345").status()).isEqualTo(404);
  }

  @Test
  void payingAfterTheDeadlineIsRefusedAndClosesTheOrder() {
    api.setStock("SKU-1", 10);
    String id = create("u-1", 1, "SKU-1", 1).getString("id");
    Sql.execute("UPDATE orders SET close_at = now() - interval '1 second' WHERE id = ?", Long.parseLong(id));
    var pay = api.pay(id);
    assertThat(pay.status()).isEqualTo(409);
    assertThat(pay.code()).isEqualTo("order_closed");
    assertThat(api.order(id).json().getString("closeReason")).isEqualTo("TIMEOUT");
  }

  @Test
  void unknownOrdersAnswer404() {
    assertThat(api.order("42").status()).isEqualTo(404);
    assertThat(api.order("42").code()).isEqualTo("order_not_found");
    assertThat(api.pay("42").status()).isEqualTo(404);
    assertThat(api.cancel("42").status()).isEqualTo(404);
    assertThat(api.get("/v1/admin/inventory/NOPE", ordertimeout.support.Api.ADMIN_KEY).code()).isEqualTo("inventory_not_found");
  }

  private static void sleep(Duration duration) {
    try {
      Thread.sleep(duration.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
