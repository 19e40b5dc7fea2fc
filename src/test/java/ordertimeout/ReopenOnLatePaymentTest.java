package ordertimeout;

import io.vertx.core.json.JsonObject;
import ordertimeout.support.Api;
import ordertimeout.support.Await;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * orders.reopenOnLatePayment: a pay after a timeout close pays the order when its stock can be taken again, and
 * refuses (409 reopen_insufficient_stock, with the ORDER_LATE_PAYMENT event for the refund) when it cannot. The
 * invariants (reserved = units of unpaid orders, stock conserved, log lines and events) are checked after each test.
 */
class ReopenOnLatePaymentTest extends ServiceTestBase {

  @Override
  protected Map<String, String> overrides() {
    return Map.of("OT_ORDERS_REOPEN_ON_LATE_PAYMENT", "true");
  }

  @Test
  void aLatePayPaysTheOrderWhenItsStockIsStillThere() {
    api.setStock("SKU-1", 5);
    api.setStock("SKU-2", 5);
    String id = create("u-1", 1, "SKU-2", 1, "SKU-1", 2).getString("id");
    long orderId = Long.parseLong(id);
    Await.until("the timeout close", Duration.ofSeconds(30), () -> statusOf(id).equals("CLOSED"));
    assertThat(api.stock("SKU-1").getLong("available")).isEqualTo(5);

    Api.Response paid = api.pay(id);
    assertThat(paid.status()).as(paid.body()).isEqualTo(200);
    assertThat(paid.json().getString("status")).isEqualTo("PAID");
    assertThat(paid.json().getValue("closeReason")).isNull();
    assertThat(paid.json().getValue("closedAt")).isNull();
    assertThat(api.stock("SKU-1").getLong("available")).as("taken again and sold").isEqualTo(3);
    assertThat(api.stock("SKU-1").getLong("reserved")).isZero();
    assertThat(api.stock("SKU-2").getLong("available")).isEqualTo(4);

    List<Map<String, Object>> events = Sql.rows(
        "SELECT payload::text AS payload FROM outbox WHERE order_id = ? AND type = 'ORDER_PAID'", orderId);
    assertThat(events).hasSize(1);
    JsonObject payload = new JsonObject((String) events.get(0).get("payload"));
    assertThat(payload.getBoolean("reopened")).isTrue();
    assertThat(payload.getJsonObject("reopenedFrom").getString("closeReason")).isEqualTo("TIMEOUT");
    assertThat(Sql.count("SELECT count(*) FROM outbox WHERE order_id = ? AND type = 'ORDER_LATE_PAYMENT'", orderId)).isZero();

    assertThat(api.pay(id).json()).as("paying again answers the same").isEqualTo(paid.json());
  }

  @Test
  void aLatePayIsRefusedWhenTheStockIsGoneAndTheRefundEventIsWrittenOnce() {
    api.setStock("SKU-1", 2);
    String id = create("u-1", 1, "SKU-1", 2).getString("id");
    long orderId = Long.parseLong(id);
    Await.until("the timeout close", Duration.ofSeconds(30), () -> statusOf(id).equals("CLOSED"));
    create("u-2", 600, "SKU-1", 1); // one of the two units released is reserved again by another order

    Api.Response refused = api.pay(id);
    assertThat(refused.status()).isEqualTo(409);
    assertThat(refused.code()).isEqualTo("reopen_insufficient_stock");
    assertThat(statusOf(id)).isEqualTo("CLOSED");
    assertThat(api.stock("SKU-1").getLong("available")).as("nothing taken").isEqualTo(1);
    assertThat(api.stock("SKU-1").getLong("reserved")).isEqualTo(1);
    List<Map<String, Object>> events = Sql.rows(
        "SELECT payload::text AS payload FROM outbox WHERE order_id = ? AND type = 'ORDER_LATE_PAYMENT'", orderId);
    assertThat(events).hasSize(1);
    assertThat(new JsonObject((String) events.get(0).get("payload")).getString("notReopened")).isEqualTo("INSUFFICIENT_STOCK");

    // Stock back later does not reopen it: the refund was asked for.
    api.setStock("SKU-1", 10);
    Api.Response again = api.pay(id);
    assertThat(again.status()).isEqualTo(409);
    assertThat(again.code()).isEqualTo("order_closed");
    assertThat(statusOf(id)).isEqualTo("CLOSED");
    assertThat(Sql.count("SELECT count(*) FROM outbox WHERE order_id = ? AND type = 'ORDER_LATE_PAYMENT'", orderId)).isEqualTo(1);
  }

  @Test
  void concurrentLatePaysReopenTheOrderOnce() {
    api.setStock("SKU-1", 5);
    String id = create("u-1", 1, "SKU-1", 2).getString("id");
    Await.until("the timeout close", Duration.ofSeconds(30), () -> statusOf(id).equals("CLOSED"));
    List<CompletableFuture<Api.Response>> pays = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      pays.add(api.postAsync("/v1/orders/" + id + "/pay", Api.USER_KEY));
    }
    for (CompletableFuture<Api.Response> pay : pays) {
      Api.Response response = pay.join();
      assertThat(response.status()).as(response.body()).isEqualTo(200);
      assertThat(response.json().getString("status")).isEqualTo("PAID");
    }
    assertThat(api.stock("SKU-1").getLong("available")).as("taken once").isEqualTo(3);
    assertThat(Sql.count("SELECT count(*) FROM outbox WHERE order_id = ? AND type = 'ORDER_PAID'", Long.parseLong(id))).isEqualTo(1);
  }

  @Test
  void aCancelledOrderIsNotReopened() {
    api.setStock("SKU-1", 5);
    String id = create("u-1", 600, "SKU-1", 1).getString("id");
    assertThat(api.cancel(id).status()).isEqualTo(200);
    Api.Response late = api.pay(id);
    assertThat(late.status()).isEqualTo(409);
    assertThat(late.code()).isEqualTo("order_closed");
    assertThat(Sql.count("SELECT count(*) FROM outbox WHERE order_id = ? AND type = 'ORDER_LATE_PAYMENT'", Long.parseLong(id)))
        .isEqualTo(1);
  }
}
