package ordertimeout.faults;

import ordertimeout.faults.Figures.Bounds;
import ordertimeout.faults.LoadPlan.Shape;
import ordertimeout.support.Await;
import ordertimeout.support.NodeProcess;
import ordertimeout.support.TcpProxy;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.Consumer;
import java.util.stream.Collectors;

/**
 * The scenarios, cheapest first, at a base rate of creates per second (ten times that in the overload): modest, the
 * machine's two cores are shared with the nodes, PostgreSQL, the broker and other builds. Waits count from each request's due time; a client gives up on a request after
 * {@link OpenLoad#CLIENT_TIMEOUT}, so a wait bound above it allows one unanswered request and its retry elsewhere.
 */
final class FaultScenarios {
  /** Creates per second of the full suite ({@code -Dfaults.rate}); the short form runs at {@link #QUICK_RATE}. */
  static final int BASE_RATE = Integer.getInteger("faults.rate", 30);
  static final int QUICK_RATE = 20;
  /** The clock skew needs the injectable clock; the suite says "not run" while the service has no such setting. */
  static final String CLOCK_OFFSET_KEY = "clockOffsetMillis";
  private static final long CUT_EVERY_MILLIS = 1_000;
  private static final int DATABASE_AWAY_SECONDS = 30;
  private static final int DATABASE_DOWN_SECONDS = 10;
  private static final int PAUSE_BEYOND_SESSION_MILLIS = 10_000;
  private static final int BROKER_PAUSE_BEYOND_DELIVERY_MILLIS = 10_000;
  private static final int CLOCK_SKEW_MILLIS = 60_000;
  /** The nodes answer every request within intake.answerWithinMillis (10 s) of its arrival; 1 s more for the client's side. */
  private static final long ANSWER_BOUND_MILLIS = 11_000;

  private FaultScenarios() {}

  /** Every scenario of the suite, in order. */
  static List<Scenario> all() {
    int rate = BASE_RATE;
    return List.of(
        baseline(rate, 40),
        connectionCut(rate, 40),
        new Scenario("database-blackhole", "PostgreSQL unreachable for 30 s: the proxies forward nothing, hold every connection",
            Shape.steady(rate, 60), 10, cluster -> {
              allDatabaseProxies(cluster, TcpProxy::blackhole);
              Await.sleep(DATABASE_AWAY_SECONDS * 1000L);
              allDatabaseProxies(cluster, TcpProxy::restore);
              return "blackholed " + DATABASE_AWAY_SECONDS + " s";
            }, new Bounds(ANSWER_BOUND_MILLIS, (DATABASE_AWAY_SECONDS + 15) * 1000L), false),
        new Scenario("database-crash", "PostgreSQL stopped -m immediate, started again 10 s later on the same data",
            Shape.steady(rate, 50), 10, cluster -> {
              cluster.database.crash();
              Await.sleep(DATABASE_DOWN_SECONDS * 1000L);
              cluster.database.startAgain();
              return "down " + DATABASE_DOWN_SECONDS + " s";
            }, new Bounds(ANSWER_BOUND_MILLIS, (DATABASE_DOWN_SECONDS + 15) * 1000L), false),
        new Scenario("overload-10x", "10x the base rate for 30 s", new Shape(rate, 50, 10, 30, 10), 0, Scenario.Fault.NONE,
            new Bounds(ANSWER_BOUND_MILLIS, 10_000), false),
        new Scenario("node-paused", "a node SIGSTOPped while it holds inventory row locks, past its Kafka session, then SIGCONT",
            Shape.steady(rate, 50), 10, FaultScenarios::pauseNodeHoldingLocks,
            new Bounds(OpenLoad.CLIENT_TIMEOUT.toMillis() + 5_000, FaultCluster.SESSION_TIMEOUT_MILLIS + 10_000L), false),
        new Scenario("kafka-paused", "the broker SIGSTOPped 10 s longer than the producer's delivery timeout, then SIGCONT",
            Shape.steady(rate, 50), 10, cluster -> {
              cluster.broker.pause();
              try {
                Await.sleep(FaultCluster.DELIVERY_TIMEOUT_MILLIS + BROKER_PAUSE_BEYOND_DELIVERY_MILLIS);
              } finally {
                cluster.broker.resume();
              }
              return "paused " + (FaultCluster.DELIVERY_TIMEOUT_MILLIS + BROKER_PAUSE_BEYOND_DELIVERY_MILLIS) + " ms";
            }, new Bounds(5_000, FaultCluster.DELIVERY_TIMEOUT_MILLIS + BROKER_PAUSE_BEYOND_DELIVERY_MILLIS + 15_000L), false),
        new Scenario("clock-skew", "one node's clock 60 s ahead, another's 60 s behind", Shape.steady(rate, 40), 0,
            new ClockSkew(), new Bounds(5_000, 5_000), false));
  }

  /** The short form run by {@code mvn -B test}: the two cheapest scenarios, shorter. */
  static List<Scenario> quick() {
    return List.of(baseline(QUICK_RATE, 10), connectionCut(QUICK_RATE, 10));
  }

  private static Scenario baseline(int rate, int seconds) {
    return new Scenario("baseline", "no fault", Shape.steady(rate, seconds), 0, Scenario.Fault.NONE, new Bounds(5_000, 5_000), false);
  }

  /** Every client connection cut once a second (creates among them sent and not answered); clients retry with the same key. */
  private static Scenario connectionCut(int rate, int seconds) {
    return new Scenario("connection-cut", "every client connection cut once a second; creates retried with the same key",
        Shape.steady(rate, seconds), 2, cluster -> {
          long until = System.currentTimeMillis() + (seconds - 3) * 1000L;
          int cuts = 0;
          while (System.currentTimeMillis() < until) {
            Await.sleep(CUT_EVERY_MILLIS);
            for (int index = 0; index < FaultCluster.NODES; index++) {
              cluster.clientProxy(index).cut();
              cluster.clientProxy(index).restore();
            }
            cuts++;
          }
          return cuts + " cuts";
        }, new Bounds(5_000, 5_000), true);
  }

  private static void allDatabaseProxies(FaultCluster cluster, Consumer<TcpProxy> action) {
    for (int index = 0; index < FaultCluster.NODES; index++) {
      action.accept(cluster.databaseProxy(index));
    }
  }

  /**
   * Stops the last node at a moment its transactions hold inventory rows: it is stopped, its backends' locks are read,
   * and it is woken and tried again a moment later while none of them is idle in a transaction holding an inventory lock.
   */
  private static String pauseNodeHoldingLocks(FaultCluster cluster) {
    int index = FaultCluster.NODES - 1;
    NodeProcess node = cluster.node(index);
    Random random = new Random(index);
    for (int attempt = 1; attempt <= 300; attempt++) {
      node.pause();
      long locks = inventoryLocksHeld(cluster, index);
      if (locks > 0 || attempt == 300) {
        try {
          Await.sleep(FaultCluster.SESSION_TIMEOUT_MILLIS + PAUSE_BEYOND_SESSION_MILLIS);
        } finally {
          node.resume();
        }
        return "node %d stopped %d ms at attempt %d, %d of its transactions holding inventory locks".formatted(node.nodeId(),
            FaultCluster.SESSION_TIMEOUT_MILLIS + PAUSE_BEYOND_SESSION_MILLIS, attempt, locks);
      }
      node.resume();
      Await.sleep(20 + random.nextInt(80));
    }
    throw new IllegalStateException("unreachable");
  }

  /** The node's backends idle in a transaction that holds a lock on inventory (the database sees them on its proxy's ports). */
  private static long inventoryLocksHeld(FaultCluster cluster, int index) {
    List<Integer> ports = cluster.databaseProxy(index).upstreamPorts();
    if (ports.isEmpty()) {
      return 0;
    }
    return cluster.database.count("SELECT count(DISTINCT a.pid) FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid "
        + "WHERE a.state = 'idle in transaction' AND l.relation = 'inventory'::regclass AND a.client_port IN ("
        + ports.stream().map(String::valueOf).collect(Collectors.joining(",")) + ")");
  }

  /** Whether this build's service reads {@code node.clockOffsetMillis} (its embedded default names every key). */
  static boolean clockInjectable() {
    try (InputStream defaults = FaultScenarios.class.getClassLoader().getResourceAsStream("conf/application.yaml")) {
      return defaults != null && new String(defaults.readAllBytes(), StandardCharsets.UTF_8).contains(CLOCK_OFFSET_KEY);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The first node restarted 60 s ahead, the second 60 s behind, for the scenario; both restarted on time afterwards. */
  static final class ClockSkew implements Scenario.Fault {
    private static final String OFFSET = "OT_NODE_CLOCK_OFFSET_MILLIS";

    @Override
    public void prepare(FaultCluster cluster) {
      cluster.restart(0, Map.of(OFFSET, Integer.toString(CLOCK_SKEW_MILLIS)));
      cluster.restart(1, Map.of(OFFSET, Integer.toString(-CLOCK_SKEW_MILLIS)));
      cluster.awaitReady();
    }

    @Override
    public String inject(FaultCluster cluster) {
      return "node " + cluster.node(0).nodeId() + " +" + CLOCK_SKEW_MILLIS + " ms, node " + cluster.node(1).nodeId() + " -"
          + CLOCK_SKEW_MILLIS + " ms";
    }

    @Override
    public void undo(FaultCluster cluster) {
      cluster.restart(0, Map.of());
      cluster.restart(1, Map.of());
      cluster.awaitReady();
    }
  }
}
