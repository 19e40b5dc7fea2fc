package ordertimeout.cluster;

import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import ordertimeout.bus.Addresses;
import ordertimeout.bus.DueOrders;
import ordertimeout.order.OrderIds;
import ordertimeout.support.Api;
import ordertimeout.support.Await;
import ordertimeout.support.ClusterSettings;
import ordertimeout.support.Invariants;
import ordertimeout.support.KafkaBroker;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * In a cluster, an extend and a payment-started asked of a node that does not own the order's shard move the close
 * timer in the owner's wheel (through Kafka): the owner's wheel fires the order first at its new due time, not at
 * its old deadline, and closes it then; the sweep closes nothing.
 */
class TimerMoveClusterTest {
  private static final int HOLD_SECONDS = 5;
  private static final int EXTEND_SECONDS = 5;

  @Test
  void theOwnerOfTheShardMovesTheTimerOfAnOrderExtendedOrHeldOnAnotherNode() {
    TestDatabase.reset();
    ClusterSettings cluster = new ClusterSettings(KafkaBroker.shared().bootstrapServers());
    try (TestService first = TestService.start(settings(cluster.forNode(31)));
         TestService second = TestService.start(settings(cluster.forNode(32)))) {
      Await.until("the shards are split between the two nodes and loaded", Duration.ofSeconds(60),
          () -> !first.ownedShards().isEmpty() && !second.ownedShards().isEmpty()
              && first.ownedShards().size() + second.ownedShards().size() == TestDatabase.SHARDS
              && first.service().ownedShards().allLoaded() && second.service().ownedShards().allLoaded());
      Map<Long, Long> firstFireBySecond = firstFires(second.vertx());
      Api api = first.api();
      api.setStock("SKU-M", 100);

      JsonObject extended = orderOwnedBy(second);
      JsonObject held = orderOwnedBy(second);
      Instant extendedWas = Instant.parse(extended.getString("closeAt"));
      Instant heldDeadline = Instant.parse(held.getString("closeAt"));
      Api.Response moved = api.extend(extended.getString("id"), new JsonObject().put("extendSeconds", EXTEND_SECONDS));
      assertThat(moved.status()).as(moved.body()).isEqualTo(200);
      Api.Response started = api.paymentStarted(held.getString("id"));
      assertThat(started.status()).as(started.body()).isEqualTo(200);
      Instant holdUntil = Instant.parse(started.json().getString("holdUntil"));

      long extendedId = Long.parseLong(extended.getString("id"));
      long heldId = Long.parseLong(held.getString("id"));
      Await.until("both orders closed", Duration.ofSeconds(60),
          () -> Sql.count("SELECT count(*) FROM orders WHERE id IN (?, ?) AND status = 'CLOSED'", extendedId, heldId) == 2);
      assertThat(Instant.parse(second.api().order(extended.getString("id")).json().getString("closedAt")))
          .isAfterOrEqualTo(extendedWas.plusSeconds(EXTEND_SECONDS));
      assertThat(Instant.parse(second.api().order(held.getString("id")).json().getString("closedAt"))).isAfterOrEqualTo(holdUntil);
      // Fired by the owner's wheel, first after the old deadline by more than half the move: the timer was moved, not
      // fired at the old deadline and put back by the refused close.
      assertThat(firstFireBySecond).containsKeys(extendedId, heldId);
      assertThat(Instant.ofEpochMilli(firstFireBySecond.get(extendedId))).isAfter(extendedWas.plusMillis(EXTEND_SECONDS * 500L));
      assertThat(Instant.ofEpochMilli(firstFireBySecond.get(heldId))).isAfter(heldDeadline.plusMillis(HOLD_SECONDS * 500L));
      assertThat(first.service().stats().timeoutCloses(DueOrders.Path.SWEEP) + second.service().stats().timeoutCloses(DueOrders.Path.SWEEP))
          .as("closed by the sweep").isZero();
      Invariants.assertHold();
    }
  }

  /** An order of 3 s created on {@code owner}, which mints its ids on its own shards (decision 0034). */
  private static JsonObject orderOwnedBy(TestService owner) {
    JsonObject item = new JsonObject().put("sku", "SKU-M").put("qty", 1);
    Api.Response created = owner.api().createOrder(UUID.randomUUID().toString(), new JsonObject().put("userId", "u-1")
        .put("timeoutSeconds", 3).put("items", new io.vertx.core.json.JsonArray().add(item)));
    assertThat(created.status()).as(created.body()).isEqualTo(201);
    long id = Long.parseLong(created.json().getString("id"));
    assertThat(owner.ownedShards()).as("the creating node owns the order's shard")
        .contains(OrderIds.shardOf(id, TestDatabase.SHARDS));
    return created.json();
  }

  /** When the wheel of the node on {@code vertx} first handed each order to its close path (wall clock ms). */
  private static Map<Long, Long> firstFires(Vertx vertx) {
    Map<Long, Long> fires = new ConcurrentHashMap<>();
    vertx.eventBus().addOutboundInterceptor(delivery -> {
      if (delivery.message().address().equals(Addresses.CLOSE_DUE) && delivery.body() instanceof DueOrders due
          && due.path() == DueOrders.Path.WHEEL) {
        long now = System.currentTimeMillis();
        for (long id : due.orderIds()) {
          fires.putIfAbsent(id, now);
        }
      }
      delivery.next();
    });
    return fires;
  }

  private static Map<String, String> settings(Map<String, String> node) {
    Map<String, String> all = new HashMap<>(node);
    all.put("OT_SWEEP_GRACE_SECONDS", "60"); // the sweep only as a safety net: the wheels must do it
    all.put("OT_ORDERS_PAYMENT_HOLD_SECONDS", Integer.toString(HOLD_SECONDS));
    return all;
  }
}
