package ordertimeout.cluster;

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
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A node that starts while the broker is away keeps every timer it hands out in its own wheel (decision 0051). When
 * the broker is back and it joins the group, the kept timers of the shards another node owns go to that node: the
 * taker is then drained before the orders' deadlines, and every order still closes from a wheel, on time. Left only in
 * the taker's wheel, those of shards the other node kept through the rebalance would be older than its catch-up
 * reads back (decision 0032) and close only by its sweep, a minute late here. A broker of its own.
 */
class KeptTimersHandoverTest {
  private static final String SKU = "SKU-KEPT-HANDOVER";
  private static final int ORDERS = 20;
  private static final int TIMEOUT_SECONDS = 75;
  /** The wheel's: a tick, a close batch, a loaded machine. The sweeps wait a minute past a deadline here. */
  private static final Duration LATENESS_BOUND = Duration.ofSeconds(3);

  @Test
  void theKeptTimersOfShardsAnotherNodeOwnsGoToItAtTheFirstAssignment() throws Exception {
    TestDatabase.reset();
    try (KafkaBroker broker = KafkaBroker.startNew()) {
      ClusterSettings cluster = new ClusterSettings(broker.bootstrapServers());
      try (TestService owner = TestService.start(node(cluster, 85))) {
        Await.until("the first node owns every shard, loaded", Duration.ofSeconds(60),
            () -> owner.ownedShards().size() == TestDatabase.SHARDS && owner.service().ownedShards().allLoaded());
        broker.stop();
        TestService taker = TestService.start(node(cluster, 86));
        try {
          Api api = taker.api();
          api.setStock(SKU, 1_000);
          long takenAt = System.nanoTime();
          api.createOrders(ORDERS, TIMEOUT_SECONDS, SKU);
          // past what the owner's catch-up reads back at the rebalance: 2 sessions + a delivery + a request deadline
          long catchUpMillis = 2 * 6_000 + 2_000 + 1_000;
          Thread.sleep(Math.max(0, catchUpMillis + 2_000 - (System.nanoTime() - takenAt) / 1_000_000));

          broker.start();
          Await.until("the shards split between the two nodes and loaded", Duration.ofSeconds(60),
              () -> !taker.ownedShards().isEmpty() && !owner.ownedShards().isEmpty()
                  && taker.ownedShards().size() + owner.ownedShards().size() == TestDatabase.SHARDS
                  && taker.service().ownedShards().allLoaded() && owner.service().ownedShards().allLoaded());
          Set<Integer> shardsOfOrders = Sql.rows("SELECT shard FROM orders").stream()
              .map(row -> ((Number) row.get("shard")).intValue()).collect(Collectors.toSet());
          assertThat(shardsOfOrders).as("orders on the shards the first node kept").containsAnyElementsOf(
              owner.ownedShards());
          Thread.sleep(2_000); // the kept timers' records reach the owner's consumer
        } finally {
          taker.close();
        }
        assertThat(Sql.count("SELECT count(*) FROM orders WHERE status = 'UNPAID' AND close_at > now()"))
            .as("the taker drained before its orders' deadlines").isEqualTo(ORDERS);

        Await.until("every order closed", Duration.ofSeconds(TIMEOUT_SECONDS).plus(LATENESS_BOUND).plusSeconds(5),
            () -> Sql.count("SELECT count(*) FROM orders WHERE status = 'CLOSED'") == ORDERS);
        long latestMillis =
            Sql.count("SELECT max(extract(epoch FROM closed_at - close_at) * 1000)::bigint FROM orders");
        System.out.printf("KeptTimersHandoverTest: %d orders closed, the latest %d ms late%n", ORDERS, latestMillis);
        assertThat(Duration.ofMillis(latestMillis)).as("the latest close's lateness").isLessThan(LATENESS_BOUND);
        assertThat(Sql.count("SELECT count(*) FROM order_log WHERE event = 'CLOSED'")).as("each closed once")
            .isEqualTo(ORDERS);
      }
    }
    Invariants.assertHold();
  }

  private static Map<String, String> node(ClusterSettings cluster, int nodeId) {
    Map<String, String> settings = new HashMap<>(cluster.forNode(nodeId));
    settings.put("OT_KAFKA_DELIVERY_TIMEOUT_MILLIS", "2000");
    settings.put("OT_INTAKE_REQUEST_DEADLINE_MILLIS", "1000");
    settings.put("OT_SWEEP_GRACE_SECONDS", "60");
    settings.put("OT_SWEEP_UNCLAIMED_GRACE_SECONDS", "60");
    return settings;
  }
}
