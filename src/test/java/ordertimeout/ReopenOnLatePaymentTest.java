package ordertimeout;

import io.vertx.core.json.JsonObject;
import ordertimeout.support.Api;
import ordertimeout.support.Await;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import ordertimeout.support.StockLedger;
import ordertimeout.support.TestDatabase;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

/**
 * orders.reopenOnLatePayment: a pay after a timeout close pays the order when its stock can be taken again, and
 * refuses (409 reopen_insufficient_stock, with the ORDER_LATE_PAYMENT event for the refund) when it cannot. The
 * invariants (reserved = units of unpaid orders, stock conserved, log lines and events) are checked after each test.
 */
class ReopenOnLatePaymentTest extends ServiceTestBase {

  private static final Duration WAIT = Duration.ofSeconds(20);

  @Override
  protected Map<String, String> overrides() {
    // The sweep leaves an order moved past its deadline to the request under test, and a pay waits for a stock row
    // the test holds instead of running out of its lock wait.
    return Map.of("OT_ORDERS_REOPEN_ON_LATE_PAYMENT", "true", "OT_SWEEP_GRACE_SECONDS", "600",
        "OT_DATABASE_INTAKE_LOCK_TIMEOUT_MILLIS", "10000", "OT_DATABASE_INTAKE_STATEMENT_TIMEOUT_MILLIS", "10000");
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

  /**
   * A pay that finds its order just past its deadline (the wheel's timer still to fire) closes it and decides the late
   * pay in the same transaction, with the order's row locked: the units it gives back cannot be taken meanwhile. The
   * test holds the SKU's inventory row, which creates lock and a reopen takes its units from (a close gives them back
   * on a stripe of inventory_released, not there); once the pay waits for that row, a close that committed already
   * would read CLOSED from here, and the test takes the units as a create would before it lets the row go.
   */
  @Test
  void aPayThatClosesItsDueOrderReopensItBeforeTheUnitsCanBeTaken() throws Exception {
    api.setStock("SKU-1", 2);
    String id = create("u-1", 600, "SKU-1", 2).getString("id");
    long orderId = Long.parseLong(id);
    Sql.execute("UPDATE orders SET close_at = now() - interval '1 second' WHERE id = ?", orderId);
    String seen;
    CompletableFuture<Api.Response> pay;
    try (Connection stock = TestDatabase.jdbc()) {
      stock.setAutoCommit(false);
      Sql.rows(stock, "SELECT available FROM inventory WHERE sku = ? FOR UPDATE", "SKU-1");
      long holder = backendPid(stock);
      pay = CompletableFuture.supplyAsync(() -> api.pay(id));
      Await.until("the pay waiting for the SKU's inventory row", WAIT, () -> pay.isDone() || Sql.count(
          "SELECT count(*) FROM pg_stat_activity WHERE ?::int = ANY(pg_blocking_pids(pid))", holder) > 0);
      seen = (String) Sql.rows("SELECT status FROM orders WHERE id = ?", orderId).get(0).get("status");
      if (seen.equals("CLOSED")) {
        Sql.rows(stock, "UPDATE inventory SET available = available - 2 WHERE sku = ? "
            + "AND available + units_released(sku) >= 2 RETURNING sku", "SKU-1");
        stock.commit();
        StockLedger.putIn("SKU-1", -2);
      } else {
        stock.rollback();
      }
    }
    Api.Response paid = pay.get(WAIT.toSeconds(), TimeUnit.SECONDS);
    assertThat(paid.status()).as(paid.body()).isEqualTo(200);
    assertThat(paid.json().getString("status")).isEqualTo("PAID");
    assertThat(seen).as("the order's status read by another transaction while the pay waited for the stock")
        .isEqualTo("UNPAID");
    assertThat(api.stock("SKU-1").getLong("available")).as("sold, nothing taken by another").isZero();
    assertThat(api.stock("SKU-1").getLong("reserved")).isZero();
    assertThat(Sql.count("SELECT count(*) FROM outbox WHERE order_id = ? AND type = 'ORDER_CLOSED'", orderId))
        .isEqualTo(1);
    List<Map<String, Object>> events = Sql.rows(
        "SELECT payload::text AS payload FROM outbox WHERE order_id = ? AND type = 'ORDER_PAID'", orderId);
    assertThat(events).hasSize(1);
    assertThat(new JsonObject((String) events.get(0).get("payload")).getBoolean("reopened")).isTrue();
    assertThat(Sql.count("SELECT count(*) FROM outbox WHERE order_id = ? AND type = 'ORDER_LATE_PAYMENT'", orderId))
        .isZero();
  }

  /**
   * Such a pay waits for its SKU's inventory row (held here by the test) before it closes the order, not after: the
   * close's stripes, its session's of inventory_released (per SKU) and of client_holdings (per client), are written
   * by the close batches and pays of every session on the same stripe (backend pid mod 16), which would wait for the
   * pay as long as it waits for the row. Closes of other orders of the client, of the same SKU and of another, on a
   * session of the pay's stripe, must wait for no lock of the pay's.
   */
  @Test
  void aPayWaitingForTheStockToReopenItsDueOrderHoldsNoStripeOfItsClose() throws Exception {
    api.setStock("SKU-1", 4);
    api.setStock("SKU-2", 1);
    long paidLate = Long.parseLong(create("u-1", 600, "SKU-1", 2).getString("id"));
    long sameSku = Long.parseLong(create("u-2", 600, "SKU-1", 1).getString("id"));
    long otherSku = Long.parseLong(create("u-3", 600, "SKU-2", 1).getString("id"));
    Sql.execute("UPDATE orders SET close_at = now() - interval '1 second' WHERE id IN (?, ?, ?)",
        paidLate, sameSku, otherSku);
    CompletableFuture<Api.Response> pay;
    try (Connection stock = TestDatabase.jdbc()) {
      stock.setAutoCommit(false);
      Sql.rows(stock, "SELECT available FROM inventory WHERE sku = ? FOR UPDATE", "SKU-1");
      long holder = backendPid(stock);
      pay = CompletableFuture.supplyAsync(() -> api.pay(String.valueOf(paidLate)));
      String waitingForHolder = "SELECT pid FROM pg_stat_activity WHERE ?::int = ANY(pg_blocking_pids(pid))"
          + " AND query LIKE '%inventory%'";
      Await.until("the pay waiting for the SKU's inventory row", WAIT,
          () -> pay.isDone() || !Sql.rows(waitingForHolder, holder).isEmpty());
      assertThat(pay).as("the pay, while the test holds the SKU's inventory row").isNotDone();
      long payStripe = ((Number) Sql.rows(waitingForHolder, holder).get(0).get("pid")).longValue() % 16;
      try (Connection closer = sessionOnStripe(payStripe)) {
        // nothing else holds what these closes lock: a lock wait here is one for the pay
        Sql.rows(closer, "SET lock_timeout = '1s'");
        String closeDue = "SELECT id FROM close_due_orders(ARRAY[?]::bigint[], 'TIMEOUT')";
        for (long other : List.of(sameSku, otherSku)) {
          assertThatCode(() -> Sql.rows(closer, closeDue, other))
              .as("the close of order %d on the pay's stripe %d", other, payStripe).doesNotThrowAnyException();
        }
      }
      stock.rollback();
    }
    Api.Response paid = pay.get(WAIT.toSeconds(), TimeUnit.SECONDS);
    assertThat(paid.status()).as(paid.body()).isEqualTo(200);
    assertThat(paid.json().getString("status")).isEqualTo("PAID");
    assertThat(Sql.count("SELECT count(*) FROM orders WHERE id IN (?, ?) AND status = 'CLOSED'", sameSku, otherSku))
        .isEqualTo(2);
    assertThat(api.stock("SKU-1").getLong("available")).isEqualTo(2);
    assertThat(api.stock("SKU-1").getLong("reserved")).isZero();
    assertThat(api.stock("SKU-2").getLong("available")).isEqualTo(1);
  }

  /** A new session of the test database whose stripe (backend pid mod 16) is {@code stripe}. */
  private static Connection sessionOnStripe(long stripe) throws SQLException {
    for (int attempt = 0; attempt < 1000; attempt++) {
      Connection session = TestDatabase.jdbc();
      if (backendPid(session) % 16 == stripe) {
        return session;
      }
      session.close();
    }
    throw new AssertionError("no session on stripe " + stripe + " in 1,000 connections");
  }

  private static long backendPid(Connection session) {
    return ((Number) Sql.rows(session, "SELECT pg_backend_pid() AS pid").get(0).get("pid")).longValue();
  }
}
