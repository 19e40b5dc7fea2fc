package ordertimeout;

import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.json.JsonObject;
import ordertimeout.bus.Addresses;
import ordertimeout.bus.DueOrders;
import ordertimeout.support.Api;
import ordertimeout.support.Await;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** POST /v1/orders/{id}/extend: a compare-and-set on the deadline of an unpaid order, its timers moved with it. */
class DeadlineExtendTest extends ServiceTestBase {

  @Test
  void anExtendedOrderIsNotClosedAtItsOldDeadlineAndIsClosedAfterTheNewOne() {
    api.setStock("SKU-1", 10);
    JsonObject order = create("u-1", 2, "SKU-1", 2);
    String id = order.getString("id");
    long orderId = Long.parseLong(id);
    Instant oldCloseAt = Instant.parse(order.getString("closeAt"));

    Api.Response extended = api.extend(id, new JsonObject().put("extendSeconds", 4));
    assertThat(extended.status()).as(extended.body()).isEqualTo(200);
    Instant newCloseAt = Instant.parse(extended.json().getString("closeAt"));
    assertThat(newCloseAt).isEqualTo(oldCloseAt.plusSeconds(4));
    assertThat(api.order(id).json().getString("closeAt")).isEqualTo(extended.json().getString("closeAt"));

    // A second past the old deadline by the database clock: still unpaid (the wheel's old timer would have closed it).
    Await.until("the order unpaid a second past its old deadline", Duration.ofSeconds(30), () -> Sql.count(
        "SELECT count(*) FROM orders WHERE id = ? AND status = 'UNPAID' AND now() > close_at - interval '3 seconds'", orderId) == 1);
    // A close asked for now (a stale timer of the old deadline) is refused by the close's compare-and-set itself.
    int closed = closeDue(orderId);
    if (Sql.count("SELECT count(*) FROM orders WHERE id = ? AND now() < close_at", orderId) == 1) {
      assertThat(closed).as("closes before the new deadline").isZero();
      assertThat(statusOf(id)).isEqualTo("UNPAID");
    }

    Await.until("the close after the new deadline", Duration.ofSeconds(30), () -> statusOf(id).equals("CLOSED"));
    JsonObject done = api.order(id).json();
    assertThat(done.getString("closeReason")).isEqualTo("TIMEOUT");
    assertThat(Instant.parse(done.getString("closedAt"))).as("never before the new deadline").isAfterOrEqualTo(newCloseAt);

    List<Map<String, Object>> events = Sql.rows(
        "SELECT payload::text AS payload FROM outbox WHERE order_id = ? AND type = 'ORDER_DEADLINE_EXTENDED'", orderId);
    assertThat(events).hasSize(1);
    JsonObject payload = new JsonObject((String) events.get(0).get("payload"));
    assertThat(payload.getString("orderId")).isEqualTo(id);
    assertThat(java.time.OffsetDateTime.parse(payload.getString("closeAt")).toInstant()).isEqualTo(newCloseAt);
    assertThat(java.time.OffsetDateTime.parse(payload.getString("previousCloseAt")).toInstant()).isEqualTo(oldCloseAt);
  }

  @Test
  void aNewCloseAtMovesTheReminderWithTheDeadlineAndTheSameOneAgainChangesNothing() {
    api.setStock("SKU-1", 10);
    JsonObject order = create("u-1", 600, "SKU-1", 1);
    String id = order.getString("id");
    Instant closeAt = Instant.parse(order.getString("closeAt"));
    Instant remindAt = Instant.parse(order.getString("remindAt"));
    JsonObject body = new JsonObject().put("closeAt", closeAt.plusSeconds(100).toString());

    Api.Response first = api.extend(id, body);
    assertThat(first.status()).as(first.body()).isEqualTo(200);
    assertThat(Instant.parse(first.json().getString("closeAt"))).isEqualTo(closeAt.plusSeconds(100));
    assertThat(Instant.parse(first.json().getString("remindAt"))).isEqualTo(remindAt.plusSeconds(100));

    Api.Response again = api.extend(id, body);
    assertThat(again.status()).isEqualTo(200);
    assertThat(again.json()).as("the same deadline again: the order unchanged").isEqualTo(first.json());
    assertThat(Sql.count("SELECT count(*) FROM outbox WHERE order_id = ? AND type = 'ORDER_DEADLINE_EXTENDED'", Long.parseLong(id)))
        .as("one event: the retry changed nothing").isEqualTo(1);
  }

  @Test
  void badExtendsAreRefusedAndChangeNothing() {
    api.setStock("SKU-1", 10);
    JsonObject order = create("u-1", 600, "SKU-1", 1);
    String id = order.getString("id");
    Instant closeAt = Instant.parse(order.getString("closeAt"));

    refused(id, new JsonObject().put("closeAt", Instant.now().minusSeconds(60).toString()), 400, "deadline_in_past");
    refused(id, new JsonObject().put("closeAt", closeAt.minusSeconds(10).toString()), 400, "deadline_not_later");
    refused(id, new JsonObject().put("extendSeconds", 86_400), 400, "deadline_beyond_ceiling");
    refused(id, new JsonObject().put("extendSeconds", 0), 400, "invalid_field");
    refused(id, new JsonObject().put("closeAt", "tomorrow"), 400, "invalid_field");
    refused(id, new JsonObject(), 400, "invalid_field");
    refused(id, new JsonObject().put("extendSeconds", 10).put("closeAt", closeAt.plusSeconds(10).toString()), 400, "invalid_field");
    refused(id, new JsonObject().put("extendBy", 10), 400, "unknown_field");
    refused("123", new JsonObject().put("extendSeconds", 10), 404, "order_not_found");
    JsonObject now = api.order(id).json();
    assertThat(now).as("nothing changed").isEqualTo(order);
    assertThat(Sql.count("SELECT count(*) FROM order_log WHERE order_id = ? AND event = 'EXTENDED'", Long.parseLong(id))).isZero();
    assertThat(Sql.count("SELECT count(*) FROM outbox WHERE type = 'ORDER_DEADLINE_EXTENDED'")).isZero();

    // An admin may go up to orders.maxTimeoutSeconds after the creation, past the client's ceiling.
    Api.Response byAdmin = api.extend(id, new JsonObject().put("extendSeconds", 86_400), Api.ADMIN_KEY);
    assertThat(byAdmin.status()).as(byAdmin.body()).isEqualTo(200);
    assertThat(Instant.parse(byAdmin.json().getString("closeAt"))).isEqualTo(closeAt.plusSeconds(86_400));
    Api.Response pastAdminCeiling = api.extend(id, new JsonObject().put("extendSeconds", 604_800), Api.ADMIN_KEY);
    assertThat(pastAdminCeiling.code()).isEqualTo("deadline_beyond_ceiling");

    assertThat(api.pay(id).status()).isEqualTo(200);
    refused(id, new JsonObject().put("extendSeconds", 10), 409, "order_paid");
    String cancelled = create("u-1", 600, "SKU-1", 1).getString("id");
    assertThat(api.cancel(cancelled).status()).isEqualTo(200);
    refused(cancelled, new JsonObject().put("extendSeconds", 10), 409, "order_closed");
  }

  @Test
  void anExtendOfAnOrderPastItsDeadlineClosesIt() {
    api.setStock("SKU-1", 10);
    String id = create("u-1", 1, "SKU-1", 1).getString("id");
    Await.until("the deadline passed", Duration.ofSeconds(30),
        () -> Sql.count("SELECT count(*) FROM orders WHERE id = ? AND now() > close_at", Long.parseLong(id)) == 1);
    refused(id, new JsonObject().put("extendSeconds", 60), 409, "order_closed");
    assertThat(statusOf(id)).isEqualTo("CLOSED");
  }

  private void refused(String id, JsonObject body, int status, String code) {
    Api.Response response = api.extend(id, body);
    assertThat(response.status()).as(body + ": " + response.body()).isEqualTo(status);
    assertThat(response.code()).as(body.encode()).isEqualTo(code);
  }

  private int closeDue(long orderId) {
    return TestService.await(service.vertx().eventBus().<Integer>request(Addresses.CLOSE_DUE,
        new DueOrders(new long[] {orderId}, DueOrders.Path.WHEEL), new DeliveryOptions().setSendTimeout(60_000))).body();
  }
}
