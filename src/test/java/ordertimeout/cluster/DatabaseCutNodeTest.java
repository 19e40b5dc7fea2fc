package ordertimeout.cluster;

import io.vertx.core.Vertx;
import io.vertx.pgclient.PgConnectOptions;
import ordertimeout.bus.DueOrders;
import ordertimeout.support.Await;
import ordertimeout.support.ClusterSettings;
import ordertimeout.support.Invariants;
import ordertimeout.support.KafkaBroker;
import ordertimeout.support.OwnNode;
import ordertimeout.support.Sql;
import ordertimeout.support.TcpProxy;
import ordertimeout.support.TestDatabase;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A node cut off from PostgreSQL (its own {@link TcpProxy} to the shared database cut) while the broker still hears
 * from it: once its lease on its node id lapsed for the database's absence (3 s leases here, so under 3 s after the
 * cut), it leaves the timer group, the other node takes every shard and closes the cut node's orders near their
 * deadlines, long before the database comes back for it. Once it does, the node joins again and is given shards back.
 * Without leaving, the cut node would keep its shards and nobody would close their orders until the cut ended.
 */
class DatabaseCutNodeTest {
  private static final String SKU = "SKU-CUT";
  private static final int ORDERS = 10;
  /** Long enough for the lease to lapse, the rebalance and the other node's load, checked below, not assumed. */
  private static final int TIMEOUT_SECONDS = 15;

  @Test
  void aNodeCutOffFromTheDatabaseHandsItsShardsToOneThatReachesItAndTakesSomeBackAfter() throws Exception {
    TestDatabase.reset();
    ClusterSettings cluster = new ClusterSettings(KafkaBroker.shared().bootstrapServers());
    PgConnectOptions database = TestDatabase.connectOptions();
    try (TcpProxy proxy = TcpProxy.to(database.getHost(), database.getPort())) {
      PgConnectOptions viaProxy = new PgConnectOptions(database).setHost("127.0.0.1").setPort(proxy.port());
      try (OwnNode cut = OwnNode.start(Vertx.vertx(), viaProxy, node(cluster, 71));
           TestService other = TestService.start(node(cluster, 72))) {
        Await.until("the shards split between the two nodes and loaded", Duration.ofSeconds(60),
            () -> shards(cut).size() + other.ownedShards().size() == TestDatabase.SHARDS && !shards(cut).isEmpty()
                && !other.ownedShards().isEmpty() && cut.service().ownedShards().allLoaded()
                && other.service().ownedShards().allLoaded());
        cut.api().setStock(SKU, 1_000);
        List<String> ids = cut.api().createOrders(ORDERS, TIMEOUT_SECONDS, SKU);
        Set<Integer> shardsOfOrders = Sql.rows("SELECT shard FROM orders").stream()
            .map(row -> ((Number) row.get("shard")).intValue()).collect(Collectors.toSet());
        assertThat(shards(cut)).as("the cut node's orders are on its own shards").containsAll(shardsOfOrders);

        proxy.cut();
        long cutAt = System.nanoTime();
        Await.until("the other node owns and loaded every shard", Duration.ofSeconds(30),
            () -> other.ownedShards().size() == TestDatabase.SHARDS && other.service().ownedShards().allLoaded());
        long movedMillis = (System.nanoTime() - cutAt) / 1_000_000;
        assertThat(shards(cut)).as("shards the cut node still owns").isEmpty();
        Await.until("the cut node's orders closed while it is still cut off", Duration.ofSeconds(TIMEOUT_SECONDS + 15),
            () -> Sql.count("SELECT count(*) FROM orders WHERE status = 'UNPAID'") == 0);
        double worstSeconds = ((Number) Sql.rows("SELECT max(extract(epoch FROM closed_at - close_at)) AS worst "
            + "FROM orders").get(0).get("worst")).doubleValue();
        assertThat(worstSeconds).as("worst lateness, s (the shards moved %d ms after the cut)", movedMillis)
            .isLessThan(2);
        assertThat(other.service().stats().timeoutCloses(DueOrders.Path.WHEEL)).as("closed by the other node's wheel")
            .isEqualTo(ORDERS);

        proxy.restore();
        long restoredAt = System.nanoTime();
        Await.until("the cut node owns and loaded shards again", Duration.ofSeconds(60),
            () -> !shards(cut).isEmpty() && cut.service().ownedShards().allLoaded()
                && shards(cut).size() + other.ownedShards().size() == TestDatabase.SHARDS);
        long backMillis = (System.nanoTime() - restoredAt) / 1_000_000;
        assertThat(ids).hasSize(ORDERS);
        assertThat(Sql.count("SELECT count(*) FROM orders WHERE status = 'CLOSED' AND closed_at < close_at")).isZero();
        Invariants.assertHold();
        System.out.printf("DatabaseCutNodeTest: the other node owned every shard %d ms after the cut; worst lateness "
            + "%.3f s; the cut node owned %d shards again %d ms after the database came back%n", movedMillis,
            worstSeconds, shards(cut).size(), backMillis);
      }
    }
  }

  private static Set<Integer> shards(OwnNode node) {
    return Arrays.stream(node.service().ownedShards().list()).boxed().collect(Collectors.toSet());
  }

  private static Map<String, String> node(ClusterSettings cluster, int nodeId) {
    Map<String, String> settings = new HashMap<>(cluster.forNode(nodeId));
    settings.put("OT_NODE_LEASE_SECONDS", "3");
    settings.put("OT_SWEEP_GRACE_SECONDS", "60"); // the sweep only as a net: a close it made would be a minute late
    settings.put("OT_RECONCILIATION_AT", "off");
    return settings;
  }
}
