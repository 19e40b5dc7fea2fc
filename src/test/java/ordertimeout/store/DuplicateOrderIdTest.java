package ordertimeout.store;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import ordertimeout.clock.WallClock;
import ordertimeout.config.AppConfig;
import ordertimeout.config.ConfigSource;
import ordertimeout.order.CreateOutcome;
import ordertimeout.order.CreateRequest;
import ordertimeout.order.IdempotencyKey;
import ordertimeout.order.NewOrder;
import ordertimeout.order.OrderIds;
import ordertimeout.order.OrderItem;
import ordertimeout.order.OrderRejected;
import ordertimeout.support.SeedOrders;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Queue;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * An order whose id another order has already (two nodes that minted the same id) fails alone: it is inserted
 * again under a new id, and refused after three taken ids; the rest of its group commits.
 */
class DuplicateOrderIdTest extends ServiceTestBase {
  private static final String SKU = "DUP";
  private static final OrderIds TEST_IDS = new OrderIds(1001, WallClock.SYSTEM);

  @Test
  void anOrderWhoseIdIsTakenGetsANewOneOrIsRefusedAloneAndTheRestOfItsGroupCommits() {
    api.setStock(SKU, 100);
    long[] taken = {TEST_IDS.next(), TEST_IDS.next(), TEST_IDS.next()};
    SeedOrders.insert(SKU, taken, 600_000, 0, null);
    long fresh1 = TEST_IDS.next();
    long fresh2 = TEST_IDS.next();
    long fresh3 = TEST_IDS.next();
    // the new ids handed out, in turn: B gets a taken one twice, D a fresh one
    Queue<Long> newIds = new ArrayDeque<>(List.of(taken[2], fresh3, taken[0]));

    List<Future<CreateOutcome>> results = createInOneGroup(List.of(
        request(fresh1, "u-a", "key-a", 1),
        request(taken[0], "u-b", "key-b", 2),
        request(fresh2, "u-c", "key-c", 4),
        request(taken[1], "u-d", "key-d", 8)), newIds);

    assertThat(results.get(0).result().order().id()).isEqualTo(fresh1);
    assertThat(results.get(1).failed()).isTrue();
    assertThat(((OrderRejected) results.get(1).cause()).reason()).isEqualTo(OrderRejected.Reason.ORDER_ID_UNAVAILABLE);
    assertThat(results.get(2).result().order().id()).isEqualTo(fresh2);
    assertThat(results.get(3).result().order().id()).as("inserted again under the next id").isEqualTo(fresh3);
    assertThat(newIds).as("every new id was asked for").isEmpty();

    assertThat(Sql.count("SELECT count(*) FROM orders WHERE user_id = 'u-seeded'")).isEqualTo(3);
    assertThat(Sql.count("SELECT count(*) FROM order_items WHERE order_id = ANY(?::bigint[]) AND qty = 1",
        (Object) new Long[] {taken[0], taken[1], taken[2]})).as("the taken orders' items untouched").isEqualTo(3);
    assertThat(Sql.count("SELECT count(*) FROM orders WHERE user_id = 'u-b'")).as("nothing of the refused order").isZero();
    assertThat(Sql.count("SELECT count(*) FROM idempotency_keys")).isEqualTo(3);
    assertThat(Sql.count("SELECT count(*) FROM idempotency_keys WHERE key = 'key-b'")).isZero();
    assertThat(Sql.count("SELECT count(*) FROM outbox WHERE type = 'ORDER_CREATED'")).isEqualTo(3);
    assertThat(Sql.count("SELECT count(*) FROM order_log WHERE event = 'CREATED'")).isEqualTo(3);
    assertThat(api.stock(SKU).getLong("reserved")).as("the seeded 3 units, and 1 + 4 + 8").isEqualTo(3 + 1 + 4 + 8);
  }

  private static CreateRequest request(long id, String userId, String key, int qty) {
    NewOrder order = new NewOrder(id, OrderIds.shardOf(id, TestDatabase.SHARDS), userId, "physical",
        List.of(new OrderItem(SKU, qty)), 600, Optional.empty());
    return new CreateRequest(order, new IdempotencyKey("dev-user", key, "hash-" + key), System.nanoTime() + TimeUnit.MINUTES.toNanos(1));
  }

  private static List<Future<CreateOutcome>> createInOneGroup(List<CreateRequest> requests, Queue<Long> newIds) {
    Vertx vertx = Vertx.vertx();
    try {
      OrderCreates creates = new OrderCreates(Pools.shared(vertx, "duplicate-id-test", TestDatabase.connectOptions(), 1, 1,
          TestDatabase.databaseConfig(Map.of()).intake()), Duration.ofSeconds(1), new LockedSkus(Duration.ofSeconds(3)),
          order -> order.withId(newIds.remove(), TestDatabase.SHARDS));
      List<Future<CreateOutcome>> results = TestService.await(creates.create(requests, 1000,
          AppConfig.from(ConfigSource.load(Path.of("conf/application.yaml"), name -> null)).clients()));
      TestService.await(Future.join(results).transform(allSettled -> Future.succeededFuture())); // one fails on purpose
      return results;
    } finally {
      TestService.await(vertx.close());
    }
  }
}
