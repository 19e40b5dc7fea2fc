package ordertimeout.cluster;

import ordertimeout.support.Api;
import ordertimeout.support.Await;
import ordertimeout.support.ClusterSettings;
import ordertimeout.support.Invariants;
import ordertimeout.support.KafkaBroker;
import ordertimeout.support.NodeProcess;
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
 * A node that dies while the broker is away keeps its shards in the group until the broker is back, but its lease runs
 * out in PostgreSQL: the other node's sweep then covers its shards (decision 0050) and closes its orders within
 * {@code node.leaseSeconds} + {@code sweep.unclaimedGraceSeconds} + {@code sweep.intervalSeconds} and a pass of their
 * deadlines, while the broker is still away. A broker of its own, stopped for good; 3 s leases, a 3 s grace.
 */
class DeadNodeWithoutBrokerTest {
  private static final String SKU = "SKU-DEAD-NO-BROKER";
  private static final int ORDERS = 5;
  /** Long enough for the broker to stop and the node to be killed before the deadlines, checked below. */
  private static final int TIMEOUT_SECONDS = 20;
  private static final int LEASE_SECONDS = 3;
  private static final int UNCLAIMED_GRACE_SECONDS = 3;
  private static final int SWEEP_INTERVAL_SECONDS = 1;
  /** The bound above plus room for a pass and a loaded machine. */
  private static final Duration LATENESS_BOUND =
      Duration.ofSeconds(LEASE_SECONDS + UNCLAIMED_GRACE_SECONDS + SWEEP_INTERVAL_SECONDS + 5);

  @Test
  void theOrdersOfANodeThatDiesWhileTheBrokerIsAwayCloseByTheOtherNodesSweep() {
    TestDatabase.reset();
    try (KafkaBroker broker = KafkaBroker.startNew()) {
      ClusterSettings cluster = new ClusterSettings(broker.bootstrapServers());
      try (TestService survivor = TestService.start(node(cluster, 75));
           NodeProcess victim = NodeProcess.start(76, node(cluster, 76))) {
        Await.until("the shards split between the two nodes and loaded", Duration.ofSeconds(60),
            () -> victim.ready() && !owned(victim).isEmpty() && !survivor.ownedShards().isEmpty()
                && owned(victim).size() + survivor.ownedShards().size() == TestDatabase.SHARDS
                && survivor.service().ownedShards().allLoaded());
        Api victimApi = new Api(victim.port());
        victimApi.setStock(SKU, 100);
        victimApi.createOrders(ORDERS, TIMEOUT_SECONDS, SKU);
        Set<Integer> shardsOfOrders = Sql.rows("SELECT shard FROM orders").stream()
            .map(row -> ((Number) row.get("shard")).intValue()).collect(Collectors.toSet());
        assertThat(shardsOfOrders).as("minted on the victim's shards")
            .doesNotContainAnyElementsOf(survivor.ownedShards());

        broker.stop();
        victim.kill();
        assertThat(Sql.count("SELECT count(*) FROM orders WHERE status = 'UNPAID' AND close_at > now()"))
            .as("the victim died before its orders' deadlines").isEqualTo(ORDERS);

        Await.until("the victim's orders closed by the survivor, the broker still away",
            Duration.ofSeconds(TIMEOUT_SECONDS).plus(LATENESS_BOUND),
            () -> Sql.count("SELECT count(*) FROM orders WHERE status = 'CLOSED'") == ORDERS);
        long latestMillis =
            Sql.count("SELECT max(extract(epoch FROM closed_at - close_at) * 1000)::bigint FROM orders");
        assertThat(Duration.ofMillis(latestMillis)).as("the latest close's lateness").isLessThan(LATENESS_BOUND);
        assertThat(Sql.count("SELECT count(DISTINCT order_id) FROM order_log WHERE event = 'CLOSED'"))
            .as("closed, each once").isEqualTo(ORDERS);
        assertThat(Sql.count("SELECT count(*) FROM order_log WHERE event = 'CLOSED'")).isEqualTo(ORDERS);
        System.out.printf("DeadNodeWithoutBrokerTest: %d orders of the dead node closed, the latest %d ms late%n",
            ORDERS, latestMillis);
      }
    }
    Invariants.assertHold();
  }

  private static Set<Integer> owned(NodeProcess node) {
    return node.stats().getJsonArray("ownedShards").stream().map(shard -> ((Number) shard).intValue())
        .collect(Collectors.toSet());
  }

  private static Map<String, String> node(ClusterSettings cluster, int nodeId) {
    Map<String, String> settings = new HashMap<>(cluster.forNode(nodeId));
    settings.put("OT_NODE_LEASE_SECONDS", Integer.toString(LEASE_SECONDS));
    settings.put("OT_SWEEP_INTERVAL_SECONDS", Integer.toString(SWEEP_INTERVAL_SECONDS));
    settings.put("OT_SWEEP_UNCLAIMED_GRACE_SECONDS", Integer.toString(UNCLAIMED_GRACE_SECONDS));
    settings.put("OT_RECONCILIATION_AT", "off");
    return settings;
  }
}
