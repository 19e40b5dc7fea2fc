package ordertimeout;

import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.json.JsonObject;
import ordertimeout.bus.Addresses;
import ordertimeout.bus.DueOrders;
import ordertimeout.support.Api;
import ordertimeout.support.Await;
import ordertimeout.support.Metrics;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * POST /v1/orders/{id}/payment-started holds the close past the deadline until holdUntil, once per order, and a pay
 * after the close writes one ORDER_LATE_PAYMENT event (orders.reopenOnLatePayment off, the default).
 */
class PaymentHoldTest extends ServiceTestBase {
  private static final int HOLD_SECONDS = 6;

  @Override
  protected Map<String, String> overrides() {
    return Map.of("OT_ORDERS_PAYMENT_HOLD_SECONDS", Integer.toString(HOLD_SECONDS));
  }

  @Test
  void aStartedPaymentHoldsTheClosePastTheDeadlineUntilHoldUntilAndNeverEarlier() {
    api.setStock("SKU-1", 10);
    JsonObject order = create("u-1", 2, "SKU-1", 2);
    String id = order.getString("id");
    long orderId = Long.parseLong(id);
    assertThat(order.getValue("holdUntil")).as("no hold before a payment started").isNull();
    double heldClosesBefore = Metrics.value(api, "ordertimeout_close_held_lateness_seconds_count");
    double ordinaryClosesBefore = Metrics.value(api, "ordertimeout_close_lateness_seconds_count");

    Api.Response started = api.paymentStarted(id);
    assertThat(started.status()).as(started.body()).isEqualTo(200);
    assertThat(started.json().getString("status")).isEqualTo("UNPAID");
    Instant closeAt = Instant.parse(started.json().getString("closeAt"));
    Instant holdUntil = Instant.parse(started.json().getString("holdUntil"));
    assertThat(holdUntil).as("orders.paymentHoldSeconds past the deadline").isEqualTo(closeAt.plusSeconds(HOLD_SECONDS));
    assertThat(api.order(id).json().getString("holdUntil")).isEqualTo(started.json().getString("holdUntil"));

    // Past the deadline by the database clock, inside the hold: still unpaid (a close at the deadline would show here).
    Await.until("the order unpaid past its deadline, inside its hold", Duration.ofSeconds(30), () -> Sql.count(
        "SELECT count(*) FROM orders WHERE id = ? AND status = 'UNPAID' AND now() > close_at AND now() < hold_until", orderId) == 1);
    // A close asked for now (a stale timer, the sweep) is refused by the close's compare-and-set itself.
    int closed = closeDue(orderId);
    long stillHeld = Sql.count("SELECT count(*) FROM orders WHERE id = ? AND now() < hold_until", orderId);
    if (stillHeld == 1) {
      assertThat(closed).as("closes of a held order before its hold ends").isZero();
      assertThat(statusOf(id)).isEqualTo("UNPAID");
    }

    Await.until("the close after the hold", Duration.ofSeconds(30), () -> statusOf(id).equals("CLOSED"));
    JsonObject done = api.order(id).json();
    assertThat(done.getString("closeReason")).isEqualTo("TIMEOUT");
    assertThat(Instant.parse(done.getString("closedAt"))).as("never before holdUntil").isAfterOrEqualTo(holdUntil);
    assertThat(api.stock("SKU-1").getLong("available")).as("stock back").isEqualTo(10);
    assertThat(Metrics.value(api, "ordertimeout_close_held_lateness_seconds_count"))
        .as("the held close counted in the held lateness").isEqualTo(heldClosesBefore + 1);
    assertThat(Metrics.value(api, "ordertimeout_close_lateness_seconds_count"))
        .as("and not in the headline lateness").isEqualTo(ordinaryClosesBefore);
  }

  @Test
  void aPayInsideTheHoldPaysTheOrder() {
    api.setStock("SKU-1", 10);
    String id = create("u-1", 1, "SKU-1", 3).getString("id");
    assertThat(api.paymentStarted(id).status()).isEqualTo(200);
    Await.until("the order unpaid past its deadline, inside its hold", Duration.ofSeconds(30), () -> Sql.count(
        "SELECT count(*) FROM orders WHERE id = ? AND status = 'UNPAID' AND now() > close_at", Long.parseLong(id)) == 1);
    Api.Response paid = api.pay(id);
    assertThat(paid.status()).as(paid.body()).isEqualTo(200);
    assertThat(paid.json().getString("status")).isEqualTo("PAID");
    assertThat(api.stock("SKU-1").getLong("available")).as("sold").isEqualTo(7);
    assertThat(api.stock("SKU-1").getLong("reserved")).isZero();
  }

  @Test
  void aSecondPaymentStartedDoesNotHoldAgain() {
    api.setStock("SKU-1", 10);
    String id = create("u-1", 60, "SKU-1", 1).getString("id");
    JsonObject first = api.paymentStarted(id).json();
    Api.Response second = api.paymentStarted(id);
    assertThat(second.status()).isEqualTo(200);
    assertThat(second.json()).as("the order unchanged").isEqualTo(first);
    assertThat(Sql.count("SELECT count(*) FROM order_log WHERE order_id = ? AND event = 'PAYMENT_STARTED'", Long.parseLong(id)))
        .isEqualTo(1);

    assertThat(api.pay(id).status()).isEqualTo(200);
    Api.Response afterPay = api.paymentStarted(id);
    assertThat(afterPay.status()).isEqualTo(409);
    assertThat(afterPay.code()).isEqualTo("order_paid");
    assertThat(api.paymentStarted("123").code()).isEqualTo("order_not_found");
  }

  /**
   * A hold is once per deadline: an extend to before the hold's end keeps it, one past it ends it, and a payment
   * started before the new deadline holds that one (without it, the order closed mid-payment at the new deadline).
   */
  @Test
  void anExtendPastTheHoldEndsItAndAPaymentStartedBeforeTheNewDeadlineHoldsAgain() {
    api.setStock("SKU-1", 10);
    String id = create("u-1", 60, "SKU-1", 1).getString("id");
    JsonObject held = api.paymentStarted(id).json();
    Instant closeAt = Instant.parse(held.getString("closeAt"));
    Instant holdUntil = Instant.parse(held.getString("holdUntil"));
    assertThat(holdUntil).isEqualTo(closeAt.plusSeconds(HOLD_SECONDS));

    Api.Response within = api.extend(id,
        new JsonObject().put("closeAt", closeAt.plusSeconds(HOLD_SECONDS / 2).toString()));
    assertThat(within.status()).as(within.body()).isEqualTo(200);
    assertThat(within.json().getString("holdUntil")).as("a hold the new deadline does not pass")
        .isEqualTo(holdUntil.toString());

    Api.Response past = api.extend(id, new JsonObject().put("extendSeconds", 600));
    assertThat(past.status()).as(past.body()).isEqualTo(200);
    assertThat(past.json().getString("holdUntil")).as("a hold the new deadline passes").isNull();
    Instant newCloseAt = Instant.parse(past.json().getString("closeAt"));

    Api.Response again = api.paymentStarted(id);
    assertThat(again.status()).as(again.body()).isEqualTo(200);
    assertThat(Instant.parse(again.json().getString("holdUntil"))).isEqualTo(newCloseAt.plusSeconds(HOLD_SECONDS));
    assertThat(Sql.count("SELECT count(*) FROM order_log WHERE order_id = ? AND event = 'PAYMENT_STARTED'",
        Long.parseLong(id))).isEqualTo(2);
  }

  /**
   * Inside its hold (deadline past, hold to come) an order is payable, and extendSeconds counts from the hold's end:
   * counted from the past deadline, +50 s was still past (400 deadline_in_past) and +300 s stayed before the hold's end
   * (200 and an event, the order's due time unmoved). The hold ends; the reminder moves as far as the deadline.
   */
  @Test
  void anExtendBySecondsInsideTheHoldCountsFromTheHoldsEndAndEndsIt() {
    api.setStock("SKU-1", 10);
    List<String> ids = List.of(create("u-1", 600, "SKU-1", 1).getString("id"),
        create("u-1", 600, "SKU-1", 1).getString("id"));
    for (String id : ids) {
      assertThat(api.paymentStarted(id).status()).isEqualTo(200);
      // the deadline 100 s ago, the hold's end 400 s ahead, the reminder 300 s before the deadline
      Sql.execute("UPDATE orders SET close_at = now() - interval '100 seconds', hold_until = now() + interval "
          + "'400 seconds', remind_at = now() - interval '400 seconds' WHERE id = ?", Long.parseLong(id));
    }
    for (int i = 0; i < ids.size(); i++) {
      long orderId = Long.parseLong(ids.get(i));
      int seconds = i == 0 ? 50 : 300;
      Instant closeAt = Sql.instantOfOrder("close_at", orderId);
      Instant holdUntil = Sql.instantOfOrder("hold_until", orderId);

      Api.Response extended = api.extend(ids.get(i), new JsonObject().put("extendSeconds", seconds));
      assertThat(extended.status()).as("+" + seconds + " s: " + extended.body()).isEqualTo(200);
      JsonObject order = extended.json();
      Instant newCloseAt = Instant.parse(order.getString("closeAt"));
      assertThat(newCloseAt).as("+" + seconds + " s past the hold's end").isEqualTo(holdUntil.plusSeconds(seconds));
      assertThat(order.getString("holdUntil")).as("the hold the new deadline passed").isNull();
      assertThat(Instant.parse(order.getString("remindAt"))).as("300 s before the new deadline, as before the old")
          .isEqualTo(newCloseAt.minusSeconds(300));
      assertThat(Sql.instantOfOrder("close_at", orderId)).isEqualTo(newCloseAt);
      assertThat(Sql.count("SELECT count(*) FROM orders WHERE id = ? AND hold_until IS NULL", orderId)).isEqualTo(1);
      List<Map<String, Object>> events = Sql.rows("SELECT payload::text AS payload FROM outbox "
          + "WHERE order_id = ? AND type = 'ORDER_DEADLINE_EXTENDED'", orderId);
      assertThat(events).hasSize(1);
      JsonObject payload = new JsonObject((String) events.get(0).get("payload"));
      assertThat(Instant.parse(payload.getString("closeAt"))).isEqualTo(newCloseAt);
      assertThat(Instant.parse(payload.getString("previousCloseAt"))).as("the order's deadline before")
          .isEqualTo(closeAt);
    }
  }

  /**
   * An order extended by seconds inside its hold closes at its new deadline, its timer moved there; not at the hold's
   * end, which the extend ended (counted from the past deadline, +3 s kept the hold and the close at its end).
   */
  @Test
  void anOrderExtendedInsideItsHoldClosesAtTheNewDeadlineNotAtTheHoldsEnd() {
    api.setStock("SKU-1", 10);
    String id = create("u-1", 60, "SKU-1", 1).getString("id");
    long orderId = Long.parseLong(id);
    assertThat(api.paymentStarted(id).status()).isEqualTo(200);
    Sql.execute("UPDATE orders SET close_at = now() - interval '2 seconds', hold_until = now() + interval '5 seconds' "
        + "WHERE id = ?", orderId);
    Instant holdUntil = Sql.instantOfOrder("hold_until", orderId);

    Api.Response extended = api.extend(id, new JsonObject().put("extendSeconds", 3));
    assertThat(extended.status()).as(extended.body()).isEqualTo(200);
    Instant newCloseAt = Instant.parse(extended.json().getString("closeAt"));
    assertThat(newCloseAt).as("3 s past the hold's end").isEqualTo(holdUntil.plusSeconds(3));
    assertThat(extended.json().getString("holdUntil")).isNull();

    Await.until("the hold's old end passed by the database clock", Duration.ofSeconds(30), () -> Sql.count(
        "SELECT count(*) FROM orders WHERE id = ? AND now() > close_at - interval '3 seconds'", orderId) == 1);
    int closed = closeDue(orderId);
    if (Sql.count("SELECT count(*) FROM orders WHERE id = ? AND now() < close_at", orderId) == 1) {
      assertThat(closed).as("closes past the hold's old end, before the new deadline").isZero();
      assertThat(statusOf(id)).isEqualTo("UNPAID");
    }
    Await.until("the close at the new deadline", Duration.ofSeconds(30), () -> statusOf(id).equals("CLOSED"));
    JsonObject done = api.order(id).json();
    assertThat(done.getString("closeReason")).isEqualTo("TIMEOUT");
    assertThat(Instant.parse(done.getString("closedAt"))).as("never before the new deadline")
        .isAfterOrEqualTo(newCloseAt);
  }

  @Test
  void aPayAfterTheCloseAnswersOrderClosedAndWritesOneLatePaymentEvent() {
    api.setStock("SKU-1", 10);
    String id = create("u-1", 1, "SKU-1", 2).getString("id");
    long orderId = Long.parseLong(id);
    Await.until("the timeout close", Duration.ofSeconds(30), () -> statusOf(id).equals("CLOSED"));

    Api.Response late = api.pay(id);
    assertThat(late.status()).isEqualTo(409);
    assertThat(late.code()).isEqualTo("order_closed");
    List<Map<String, Object>> events = Sql.rows(
        "SELECT payload::text AS payload FROM outbox WHERE order_id = ? AND type = 'ORDER_LATE_PAYMENT'", orderId);
    assertThat(events).hasSize(1);
    JsonObject payload = new JsonObject((String) events.get(0).get("payload"));
    assertThat(payload.getString("orderId")).isEqualTo(id);
    assertThat(payload.getString("status")).isEqualTo("CLOSED");
    assertThat(payload.getString("reason")).isEqualTo("TIMEOUT");
    assertThat(payload.getString("userId")).isEqualTo("u-1");
    assertThat(payload.getJsonArray("items").getJsonObject(0).getString("sku")).isEqualTo("SKU-1");
    assertThat(payload.getString("latePaymentAt")).isNotNull();
    assertThat(payload.getString("notReopened")).isEqualTo("REOPEN_OFF");

    Api.Response again = api.pay(id);
    assertThat(again.status()).isEqualTo(409);
    assertThat(again.code()).isEqualTo("order_closed");
    assertThat(Sql.count("SELECT count(*) FROM outbox WHERE order_id = ? AND type = 'ORDER_LATE_PAYMENT'", orderId))
        .as("one event per order, not one per pay").isEqualTo(1);
    assertThat(api.stock("SKU-1").getLong("available")).as("the stock stays released").isEqualTo(10);
  }

  /**
   * A pay that finds its order just past its deadline, before the wheel closes it, closes it as a timeout and decides
   * its late pay in the same transaction: 409 order_closed, one ORDER_LATE_PAYMENT, the stock given back.
   */
  @Test
  void aPayJustPastTheDeadlineClosesTheOrderAndWritesOneLatePaymentEvent() {
    api.setStock("SKU-1", 10);
    String id = create("u-1", 600, "SKU-1", 2).getString("id");
    long orderId = Long.parseLong(id);
    Sql.execute("UPDATE orders SET close_at = now() - interval '1 second' WHERE id = ?", orderId);

    Api.Response late = api.pay(id);
    assertThat(late.status()).as(late.body()).isEqualTo(409);
    assertThat(late.code()).isEqualTo("order_closed");
    assertThat(statusOf(id)).isEqualTo("CLOSED");
    assertThat(Sql.count("SELECT count(*) FROM outbox WHERE order_id = ? AND type = 'ORDER_CLOSED'", orderId))
        .isEqualTo(1);
    List<Map<String, Object>> events = Sql.rows(
        "SELECT payload::text AS payload FROM outbox WHERE order_id = ? AND type = 'ORDER_LATE_PAYMENT'", orderId);
    assertThat(events).hasSize(1);
    assertThat(new JsonObject((String) events.get(0).get("payload")).getString("notReopened")).isEqualTo("REOPEN_OFF");
    assertThat(api.stock("SKU-1").getLong("available")).as("the stock given back").isEqualTo(10);
    assertThat(api.stock("SKU-1").getLong("reserved")).isZero();
  }

  @Test
  void concurrentLatePaysWriteOneEvent() {
    api.setStock("SKU-1", 10);
    String id = create("u-1", 1, "SKU-1", 1).getString("id");
    Await.until("the timeout close", Duration.ofSeconds(30), () -> statusOf(id).equals("CLOSED"));
    List<CompletableFuture<Api.Response>> pays = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      pays.add(api.postAsync("/v1/orders/" + id + "/pay", Api.USER_KEY));
    }
    for (CompletableFuture<Api.Response> pay : pays) {
      Api.Response response = pay.join();
      assertThat(response.status()).as(response.body()).isEqualTo(409);
      assertThat(response.code()).isEqualTo("order_closed");
    }
    assertThat(Sql.count("SELECT count(*) FROM outbox WHERE order_id = ? AND type = 'ORDER_LATE_PAYMENT'", Long.parseLong(id)))
        .isEqualTo(1);
  }

  @Test
  void aPayOfACancelledOrderWritesALatePaymentEventToo() {
    api.setStock("SKU-1", 10);
    String id = create("u-1", 600, "SKU-1", 1).getString("id");
    assertThat(api.cancel(id).status()).isEqualTo(200);
    assertThat(api.pay(id).code()).isEqualTo("order_closed");
    assertThat(Sql.count("SELECT count(*) FROM outbox WHERE order_id = ? AND type = 'ORDER_LATE_PAYMENT'", Long.parseLong(id)))
        .isEqualTo(1);
  }


  /** Hands the order to the close verticle as the wheel would; returns how many it closed. */
  private int closeDue(long orderId) {
    return TestService.await(service.vertx().eventBus().<Integer>request(Addresses.CLOSE_DUE,
        new DueOrders(new long[] {orderId}, DueOrders.Path.WHEEL), new DeliveryOptions().setSendTimeout(60_000))).body();
  }
}
