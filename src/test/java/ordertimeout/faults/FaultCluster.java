package ordertimeout.faults;

import ordertimeout.support.Await;
import ordertimeout.support.ClusterSettings;
import ordertimeout.support.KafkaBroker;
import ordertimeout.support.NodeProcess;
import ordertimeout.support.TcpProxy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The three-node cluster profile on loopback, with faults at hand: a PostgreSQL of its own ({@link FaultDatabase}),
 * a broker of its own, and three nodes as separate processes (Redis off), each reaching the database through a
 * {@link TcpProxy} of its own and reachable by clients through another (used when a scenario cuts client
 * connections).
 */
final class FaultCluster implements AutoCloseable {
  static final int SHARDS = 64;
  static final int NODES = 3;
  static final int SESSION_TIMEOUT_MILLIS = 6_000;
  static final int DELIVERY_TIMEOUT_MILLIS = 10_000;
  static final int SWEEP_INTERVAL_SECONDS = 2;
  static final int SWEEP_GRACE_SECONDS = 2;
  private static final int FIRST_NODE_ID = 61;
  private static final Duration READY_TIMEOUT = Duration.ofSeconds(180);

  final FaultDatabase database;
  final KafkaBroker broker;
  final ClusterSettings settings;
  private final List<TcpProxy> databaseProxies = new ArrayList<>();
  private final List<TcpProxy> clientProxies = new ArrayList<>();
  private final List<NodeProcess> nodes = new ArrayList<>();

  private FaultCluster(FaultDatabase database, KafkaBroker broker) {
    this.database = database;
    this.broker = broker;
    this.settings = new ClusterSettings(broker.bootstrapServers());
  }

  static FaultCluster start() {
    FaultDatabase database = FaultDatabase.start();
    KafkaBroker broker;
    try {
      broker = KafkaBroker.startNew();
    } catch (RuntimeException e) {
      database.close();
      throw e;
    }
    FaultCluster cluster = new FaultCluster(database, broker);
    try {
      for (int index = 0; index < NODES; index++) {
        cluster.databaseProxies.add(TcpProxy.to("127.0.0.1", database.port()));
        cluster.nodes.add(cluster.startNode(index, Map.of()));
        cluster.clientProxies.add(TcpProxy.to("127.0.0.1", cluster.nodes.get(index).port()));
      }
      cluster.awaitReady();
      return cluster;
    } catch (RuntimeException | Error e) {
      cluster.close();
      throw e;
    }
  }

  NodeProcess node(int index) {
    return nodes.get(index);
  }

  TcpProxy databaseProxy(int index) {
    return databaseProxies.get(index);
  }

  TcpProxy clientProxy(int index) {
    return clientProxies.get(index);
  }

  /** Stops node {@code index} (SIGTERM) and starts it again with {@code extra} settings on top of the profile's; its client proxy follows. */
  void restart(int index, Map<String, String> extra) {
    nodes.get(index).close();
    nodes.set(index, startNode(index, extra));
    clientProxies.get(index).close();
    clientProxies.set(index, TcpProxy.to("127.0.0.1", nodes.get(index).port()));
  }

  /** Every node ready, and the shards split between all of them. */
  void awaitReady() {
    Await.until("three nodes ready and owning every shard between them", READY_TIMEOUT, () -> {
      Set<Integer> owned = new HashSet<>();
      for (NodeProcess node : nodes) {
        if (!node.isAlive()) {
          throw new IllegalStateException("node " + node.nodeId() + " exited while starting; its log: " + node.log().toAbsolutePath());
        }
        if (!node.ready()) {
          return false;
        }
        try {
          List<Object> shards = node.stats().getJsonArray("ownedShards").getList();
          if (shards.isEmpty()) {
            return false;
          }
          shards.forEach(shard -> owned.add(((Number) shard).intValue()));
        } catch (RuntimeException notYet) {
          return false;
        }
      }
      return owned.size() == SHARDS;
    });
  }

  /** Inventory rows for a scenario's SKUs, written directly (what the checker compares the stock with). */
  void stockUp(String tag) {
    database.rows("INSERT INTO inventory (sku, available, reserved) SELECT ? || '-sku-' || n, ?, 0 FROM generate_series(0, ?) n",
        tag, LoadPlan.STOCK_PER_SKU, LoadPlan.SKUS - 1);
  }

  private NodeProcess startNode(int index, Map<String, String> extra) {
    int nodeId = FIRST_NODE_ID + index;
    Map<String, String> node = new HashMap<>(settings.forNode(nodeId));
    node.put("OT_DATABASE_URL", database.url(databaseProxies.get(index).port()));
    node.put("OT_DATABASE_POOL_SIZE", "6");
    node.put("OT_HTTP_INSTANCES", "1");
    node.put("OT_KAFKA_SESSION_TIMEOUT_MILLIS", Integer.toString(SESSION_TIMEOUT_MILLIS));
    node.put("OT_KAFKA_DELIVERY_TIMEOUT_MILLIS", Integer.toString(DELIVERY_TIMEOUT_MILLIS));
    node.put("OT_SWEEP_INTERVAL_SECONDS", Integer.toString(SWEEP_INTERVAL_SECONDS));
    node.put("OT_SWEEP_GRACE_SECONDS", Integer.toString(SWEEP_GRACE_SECONDS));
    node.put("OT_LOGGING_LEVELS", "{io.netty: WARN, io.zonky: WARN, org.flywaydb: WARN, org.apache.kafka: WARN, access: OFF}");
    node.putAll(extra);
    return NodeProcess.start(nodeId, node);
  }

  @Override
  public void close() {
    List<AutoCloseable> started = new ArrayList<>(nodes);
    started.addAll(clientProxies);
    started.addAll(databaseProxies);
    started.add(broker);
    started.add(database);
    RuntimeException first = null;
    for (AutoCloseable each : started) {
      try {
        each.close();
      } catch (Exception e) {
        if (first == null) {
          first = new IllegalStateException("could not stop everything the fault cluster started", e);
        } else {
          first.addSuppressed(e);
        }
      }
    }
    if (first != null) {
      throw first;
    }
  }
}
