package ordertimeout.store;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import ordertimeout.order.CloseReason;
import ordertimeout.order.OrderItem;
import ordertimeout.order.OrderRejected;
import ordertimeout.order.OrderStatus;
import ordertimeout.order.PayRequest;
import ordertimeout.order.StateChange;
import ordertimeout.support.Api;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/** A group of pays shares one transaction, and each pay in it is decided on its own. */
class PayGroupTest extends ServiceTestBase {
  private static final String CLIENT = "dev-user"; // the client of Api.USER_KEY

  /** The sweep must leave the overdue order to the pay. */
  @Override
  protected Map<String, String> overrides() {
    return Map.of("OT_SWEEP_GRACE_SECONDS", "600");
  }

  @Test
  void eachPayOfAGroupGetsItsOwnAnswer() {
    api.setStock("GROUPED", 100);
    long unpaid = idOf(create("u-1", 600, "GROUPED", 3));
    long othersOrder = idOf(create("u-2", 600, "GROUPED", 5));
    long overdue = idOf(create("u-3", 600, "GROUPED", 7));
    long cancelled = idOf(create("u-4", 600, "GROUPED", 11));
    assertThat(api.post("/v1/orders/" + cancelled + "/cancel", "dev-user-key").status()).isEqualTo(200);
    Sql.execute("UPDATE orders SET close_at = now() - interval '1 second' WHERE id = ?", overdue);
    Sql.execute("UPDATE orders SET client = 'someone-else' WHERE id = ?", othersOrder);
    long missing = 12345L;

    List<Future<StateChange>> results = payInOneGroup(List.of(
        pay(unpaid, CLIENT),
        pay(othersOrder, CLIENT),
        pay(overdue, CLIENT),
        pay(unpaid, CLIENT),
        pay(cancelled, CLIENT),
        pay(missing, CLIENT)));

    assertThat(results).hasSize(6);
    assertChange(results.get(0), unpaid, OrderStatus.PAID, true);
    assertNotFound(results.get(1));
    assertChange(results.get(2), overdue, OrderStatus.CLOSED, true);
    assertThat(results.get(2).result().order().closeReason()).isEqualTo(CloseReason.TIMEOUT);
    assertChange(results.get(3), unpaid, OrderStatus.PAID, false);
    assertChange(results.get(4), cancelled, OrderStatus.CLOSED, false);
    assertNotFound(results.get(5));

    assertThat(Sql.count("SELECT count(*) FROM orders WHERE id = ? AND status = 'UNPAID'", othersOrder)).isEqualTo(1);
    assertThat(Sql.count("SELECT count(*) FROM order_log WHERE event = 'PAID'")).isEqualTo(1);
    assertThat(Sql.count("SELECT count(*) FROM order_log WHERE event = 'CLOSED'")).isEqualTo(2);
    assertThat(Sql.count("SELECT count(*) FROM outbox WHERE type = 'ORDER_PAID'")).isEqualTo(1);
    assertThat(Sql.count("SELECT count(*) FROM outbox WHERE type = 'ORDER_CLOSED'")).isEqualTo(2);
    var stock = api.stock("GROUPED");
    assertThat(stock.getLong("reserved")).as("only the other client's order still holds stock").isEqualTo(5);
    assertThat(stock.getLong("available")).as("3 sold; 7 and 11 back").isEqualTo(100 - 3 - 5);
  }

  @Test
  void aGroupOfPaysForOrdersOverManySkusSellsEachOnce() {
    int orders = 40;
    long[] ids = new long[orders];
    for (int i = 0; i < orders; i++) {
      api.setStock("S-" + i % 7, 1000);
    }
    for (int i = 0; i < orders; i++) {
      ids[i] = idOf(create("u-" + i, 600, "S-" + i % 7, 1 + i % 3, "S-" + (i + 3) % 7, 2));
    }
    List<PayRequest> requests = new java.util.ArrayList<>();
    for (int i = orders - 1; i >= 0; i--) requests.add(pay(ids[i], CLIENT));

    List<Future<StateChange>> results = payInOneGroup(requests);

    for (int i = 0; i < orders; i++) {
      int order = orders - 1 - i;
      assertChange(results.get(i), ids[order], OrderStatus.PAID, true);
      // answered from the pay itself when the group paid all its orders: the items too, by SKU
      assertThat(results.get(i).result().order().items()).as("the items of order %d in its answer", order)
          .containsExactlyElementsOf(Stream.of(new OrderItem("S-" + order % 7, 1 + order % 3),
              new OrderItem("S-" + (order + 3) % 7, 2)).sorted(OrderItem.BY_SKU).toList());
    }
    assertThat(Sql.count("SELECT count(*) FROM orders WHERE status = 'PAID'")).isEqualTo(orders);
    assertThat(Sql.count("SELECT coalesce(sum(reserved), 0) FROM stock")).isZero();
    long sold = 0;
    for (int i = 0; i < orders; i++) sold += 1 + i % 3 + 2;
    assertThat(Sql.count("SELECT 7 * 1000 - sum(available) FROM stock")).isEqualTo(sold);
  }

  /** An admin pays any client's order, alone (one by one) or in a group. */
  @Test
  void anAdminPaysAnyClientsOrder() {
    api.setStock("ADMIN", 10);
    long alone = idOf(create("u-1", 600, "ADMIN", 1));
    long grouped = idOf(create("u-2", 600, "ADMIN", 2));

    Api.Response paid = api.post("/v1/orders/" + alone + "/pay", Api.ADMIN_KEY);
    assertThat(paid.status()).as(paid.body()).isEqualTo(200);
    assertThat(paid.json().getString("status")).isEqualTo("PAID");

    List<Future<StateChange>> results = payInOneGroup(List.of(pay(grouped, null)));
    assertChange(results.get(0), grouped, OrderStatus.PAID, true);
    assertThat(api.stock("ADMIN").getLong("reserved")).isZero();
  }

  /** A row another transaction holds does not hold the group up: that pay waits on its own, the others commit. */
  @Test
  void aPayWhoseOrderAnotherTransactionHoldsWaitsAloneAndTheOthersCommit() throws Exception {
    api.setStock("HELD", 10);
    long held = idOf(create("u-1", 600, "HELD", 1));
    long free = idOf(create("u-2", 600, "HELD", 2));
    Vertx vertx = Vertx.vertx();
    try (Connection locker = TestDatabase.jdbc()) {
      locker.setAutoCommit(false);
      try (var lock = locker.prepareStatement("SELECT id FROM orders WHERE id = ? FOR UPDATE")) {
        lock.setLong(1, held);
        lock.executeQuery().close();
      }
      OrderStore store = new OrderStore(Pools.shared(vertx, "pay-group-test", TestDatabase.connectOptions(), 2, 1,
          TestDatabase.databaseConfig(Map.of()).intake()));
      List<Future<StateChange>> answers = TestService.await(
          store.pay(List.of(pay(held, CLIENT), pay(free, CLIENT))));

      assertChange(answers.get(1), free, OrderStatus.PAID, true);
      assertThat(Sql.count("SELECT count(*) FROM orders WHERE id = ? AND status = 'PAID'", free)).as("committed").isEqualTo(1);
      Thread.sleep(200);
      assertThat(answers.get(0).isComplete()).as("the held one waits for the row").isFalse();
      locker.commit();
      TestService.await(answers.get(0));
      assertChange(answers.get(0), held, OrderStatus.PAID, true);
    } finally {
      TestService.await(vertx.close());
    }
    assertThat(api.stock("HELD").getLong("reserved")).isZero();
  }

  /** A pay of {@code id} by {@code client} (null: an admin) with a minute to be decided in. */
  private static PayRequest pay(long id, String client) {
    return new PayRequest(id, client, System.nanoTime() + TimeUnit.MINUTES.toNanos(1));
  }

  private static List<Future<StateChange>> payInOneGroup(List<PayRequest> requests) {
    Vertx vertx = Vertx.vertx();
    try {
      OrderStore store = new OrderStore(Pools.shared(vertx, "pay-group-test", TestDatabase.connectOptions(), 1, 1,
          TestDatabase.databaseConfig(Map.of()).intake()));
      List<Future<StateChange>> results = TestService.await(store.pay(requests));
      TestService.await(Future.join(results).transform(allSettled -> Future.succeededFuture())); // some fail on purpose
      return results;
    } finally {
      TestService.await(vertx.close());
    }
  }

  private static void assertChange(Future<StateChange> result, long id, OrderStatus status, boolean changed) {
    assertThat(result.succeeded()).as("%s", result.cause()).isTrue();
    assertThat(result.result().order().id()).isEqualTo(id);
    assertThat(result.result().order().status()).isEqualTo(status);
    assertThat(result.result().changed()).as("changed").isEqualTo(changed);
  }

  private static void assertNotFound(Future<StateChange> result) {
    assertThat(result.failed()).isTrue();
    assertThat(result.cause()).isInstanceOf(OrderRejected.class);
    assertThat(((OrderRejected) result.cause()).reason()).isEqualTo(OrderRejected.Reason.ORDER_NOT_FOUND);
  }

  private static long idOf(io.vertx.core.json.JsonObject order) {
    return Long.parseLong(order.getString("id"));
  }
}
