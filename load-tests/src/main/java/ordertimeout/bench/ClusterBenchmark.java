package ordertimeout.bench;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.pgclient.PgConnectOptions;
import ordertimeout.support.ClusterSettings;
import ordertimeout.support.KafkaBroker;
import ordertimeout.support.NodeProcess;
import ordertimeout.support.TestDatabase;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.TopicPartition;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * Cluster mode on this machine, by process: {@link SteadyStateBenchmark}'s mix (creates, 60% paid, each order's status
 * read once, the rest closed on time; {@link OpenLoad}, open model) through one node and through three, each node in
 * a JVM of its own started from the test class path, all in cluster mode on a broker of their own (a JVM too), sharing
 * the benchmark's PostgreSQL. Creates go to the nodes in turn, a pay or read to any of them.
 *
 * <p>Per run it gives each process's CPU: the nodes', the broker's, PostgreSQL's and the generator's (this JVM), over
 * the measured schedule, per create sent, and for 10 s once every order has ended (what the warm processes spend with
 * nothing to do); and the records the run put on the timer topic. What three nodes spend above one is partly the
 * protocol (timers and cancels through Kafka, the group, the relay: the broker's share and those records tell it) and
 * partly three JVMs sharing two cores (their compilers, whose share of the nodes' CPU it prints, and their fixed
 * costs). A run fails when an order ended twice or early or was left unpaid, the stock does not add up, or a read
 * after a pay's answer said anything but PAID.
 *
 * <p>Arguments: creates per second (300), seconds (30). System properties: cluster.nodes (1,3), the node counts to run,
 * in this order, then again in reverse for each further cluster.rounds (1); cluster.warmupSeconds (20).
 */
public final class ClusterBenchmark {
  private static final int SHARDS = 64;
  private static final long IDLE_MILLIS = 10_000;

  private ClusterBenchmark() {}

  public static void main(String[] args) throws Exception {
    int rate = args.length > 0 ? Integer.parseInt(args[0]) : 300;
    int seconds = args.length > 1 ? Integer.parseInt(args[1]) : 30;
    List<Integer> counts = new ArrayList<>();
    for (String count : System.getProperty("cluster.nodes", "1,3").split(",")) {
      counts.add(Integer.parseInt(count.trim()));
    }
    int rounds = Integer.getInteger("cluster.rounds", 1);
    JsonArray runs = new JsonArray();
    boolean holds = true;
    for (int round = 0; round < rounds; round++) {
      List<Integer> order = new ArrayList<>(counts);
      if (round % 2 == 1) {
        Collections.reverse(order);
      }
      for (int nodes : order) {
        JsonObject run = run(nodes, rate, seconds);
        runs.add(run);
        holds &= run.getBoolean("holds");
      }
    }
    Results.write("cluster", Results.header("cluster").put("ratePerSecond", rate).put("seconds", seconds)
        .put("runs", runs));
    System.exit(holds ? 0 : 1);
  }

  private static JsonObject run(int nodeCount, int rate, int seconds) throws Exception {
    try (KafkaBroker broker = KafkaBroker.startNew(); BenchDatabase db = BenchDatabase.fresh("bench-db-cluster")) {
      db.executeScript(
          "INSERT INTO inventory (sku, available) SELECT 'SKU-' || s, 1000000000 FROM generate_series(0, 999) s");
      ClusterSettings cluster = new ClusterSettings(broker.bootstrapServers());
      List<NodeProcess> nodes = new ArrayList<>();
      try {
        for (int id = 1; id <= nodeCount; id++) {
          nodes.add(NodeProcess.start(id, nodeSettings(cluster, id, db.setup.connectOptions())));
        }
        awaitShardsSpread(nodes);
        return measure(nodes, broker, cluster, db, rate, seconds);
      } finally {
        nodes.forEach(NodeProcess::close);
      }
    }
  }

  private static Map<String, String> nodeSettings(ClusterSettings cluster, int id, PgConnectOptions database) {
    Map<String, String> settings = new HashMap<>(cluster.forNode(id));
    settings.remove("OT_KAFKA_RELAY_INTERVAL_MILLIS"); // the tests' quicker relay; the shipped default here
    settings.put("OT_DATABASE_URL", TestDatabase.url(database));
    settings.put("OT_LOG_LEVEL", "WARN");
    settings.put("OT_ORDERS_MAX_UNPAID_PER_USER", "1000000");
    settings.put("OT_CLIENTS_OVERRIDES", Results.UNCAPPED_DEV_USER);
    return settings;
  }

  /** Every node ready, and every shard owned, by each node some. */
  private static void awaitShardsSpread(List<NodeProcess> nodes) throws InterruptedException {
    long until = System.currentTimeMillis() + 180_000;
    while (System.currentTimeMillis() < until) {
      Set<Integer> owned = new HashSet<>();
      boolean each = true;
      for (NodeProcess node : nodes) {
        if (!node.isAlive()) {
          throw new IllegalStateException(
              "node " + node.nodeId() + " exited while starting; its log: " + node.log().toAbsolutePath());
        }
        try {
          List<Object> shards = node.ready() ? node.stats().getJsonArray("ownedShards").getList() : List.of();
          each &= !shards.isEmpty();
          shards.forEach(shard -> owned.add(((Number) shard).intValue()));
        } catch (RuntimeException notYet) {
          each = false;
        }
      }
      if (each && owned.size() == SHARDS) {
        return;
      }
      Thread.sleep(200);
    }
    throw new IllegalStateException(nodes.size() + " nodes did not own every shard between them within 180 s");
  }

  private static JsonObject measure(List<NodeProcess> nodes, KafkaBroker broker, ClusterSettings cluster,
                                    BenchDatabase db, int rate, int seconds) throws Exception {
    long timerRecordsBefore = records(broker, cluster.timersTopic());
    List<Long> nodePids = nodes.stream().map(NodeProcess::pid).toList();
    List<Long> pids = new ArrayList<>(nodePids);
    pids.add(broker.pid());
    List<Integer> ports = nodes.stream().map(NodeProcess::port).toList();
    int warmupSeconds = Integer.getInteger("cluster.warmupSeconds", 20);
    ProcessWindow loadWindow = new ProcessWindow(db, pids, nodePids);
    OpenLoad.Settings settings =
        new OpenLoad.Settings("127.0.0.1", ports, rate, seconds, warmupSeconds, 64, 1, "SKU-", 1);
    OpenLoad.Result open = OpenLoad.run(settings, loadWindow::start, loadWindow::stop);
    CpuWindow.Split load = loadWindow.split.withGenerator(open.cpuSeconds());
    double[] loadCores = loadWindow.cores;
    long waitUntil = System.currentTimeMillis() + 60_000;
    while (db.number("SELECT count(*) FROM orders WHERE status = 'UNPAID'") > 0
        && System.currentTimeMillis() < waitUntil) {
      Thread.sleep(200);
    }
    // After the load, every order ended: what the warm processes spend with nothing to do.
    ProcessWindow idleWindow = new ProcessWindow(db, pids, nodePids);
    idleWindow.start();
    Thread.sleep(IDLE_MILLIS);
    idleWindow.stop();
    CpuWindow.Split idleSplit = idleWindow.split;
    double[] idleCores = idleWindow.cores;
    long timerRecords = records(broker, cluster.timersTopic()) - timerRecordsBefore;
    double orders = db.number("SELECT count(*) FROM orders");
    double early = db.number("SELECT count(*) FROM orders WHERE closed_at < close_at");
    double unpaid = db.number("SELECT count(*) FROM orders WHERE status = 'UNPAID'");
    double endedTwice = db.endedMoreThanOnce();
    long wrongStock = db.stockInvariantViolations();
    boolean holds = early == 0 && unpaid == 0 && endedTwice == 0 && wrongStock == 0 && open.staleReads() == 0;

    int n = nodes.size();
    double perCreate = load.seconds() * 1e6 / Math.max(1, open.sent());
    double nodesLoad = sum(loadCores, n);
    double nodesIdle = sum(idleCores, n);
    JsonObject result = new JsonObject()
        .put("nodes", n)
        .put("holds", holds)
        .put("idleCores", new JsonObject().put("nodes", round(idleCores, n)).put("broker", Results.round(idleCores[n]))
            .put("postgres", Results.round(idleSplit.postgresCores())))
        .put("loadCores", new JsonObject().put("nodes", round(loadCores, n))
            .put("broker", Results.round(loadCores[n]))
            .put("postgres", Results.round(load.postgresCores())).put("generator", Results.round(load.generatorCores()))
            .put("rest", Results.round(Math.max(0, load.otherCores() - nodesLoad - loadCores[n]))))
        .put("cpuMicrosPerCreate", new JsonObject().put("nodes", Results.round(nodesLoad * perCreate))
            .put("nodesAboveIdle", Results.round((nodesLoad - nodesIdle) * perCreate))
            .put("nodesJitCompilers", Results.round(loadWindow.compilerCores * perCreate))
            .put("broker", Results.round(loadCores[n] * perCreate))
            .put("postgres", Results.round(load.postgresCores() * perCreate)))
        .put("timerRecords", timerRecords)
        .put("openLoad", open.toJson())
        .put("closedEarly", (long) early).put("leftUnpaid", (long) unpaid).put("endedMoreThanOnce", (long) endedTwice)
        .put("stockInvariantBroken", wrongStock);
    System.out.printf("cluster: %d node%s, %d creates/s for %d s after a %d s warm-up: %d of %d sent on time; "
            + "create p50 %.1f ms, p99 %.1f ms, %d errors; pay p99 %.1f ms, %d errors; read p99 %.1f ms, %d errors, "
            + "%d stale; "
            + "%d records on the timer topic (%.2f per order, the warm-up's included); "
            + "CPU per create sent: nodes %.0f µs (%.0f above their idle, %.0f their JIT compilers), broker %.0f, "
            + "PostgreSQL %.0f; "
            + "cores under load: "
            + "nodes %s, broker %.2f, PostgreSQL %.2f, generator %.2f; idle after the load: nodes %s, broker %.2f, "
            + "PostgreSQL %.2f; closed early %d, left unpaid %d, ended twice %d, stock %s%n",
        n, n == 1 ? "" : "s", rate, seconds, warmupSeconds, open.sent() - open.lateSends(), open.planned(),
        OpenLoad.Result.ms(open.createMicros().getValueAtPercentile(50)),
        OpenLoad.Result.ms(open.createMicros().getValueAtPercentile(99)), open.createErrors(),
        OpenLoad.Result.ms(open.payMicros().getValueAtPercentile(99)), open.payErrors(),
        OpenLoad.Result.ms(open.readMicros().getValueAtPercentile(99)), open.readErrors(), open.staleReads(),
        timerRecords, timerRecords / Math.max(1, orders), nodesLoad * perCreate, (nodesLoad - nodesIdle) * perCreate,
        loadWindow.compilerCores * perCreate, loadCores[n] * perCreate,
        load.postgresCores() * perCreate, describe(loadCores, n), loadCores[n], load.postgresCores(),
        load.generatorCores(), describe(idleCores, n), idleCores[n], idleSplit.postgresCores(),
        (long) early, (long) unpaid, (long) endedTwice, wrongStock == 0 ? "consistent" : "BROKEN");
    if (!holds) {
      System.out.printf("cluster: FAILED with %d nodes: %d closed early, %d left unpaid, %d ended more than once, "
          + "%d SKUs with wrong stock, %d reads not PAID after their pay was answered%n", n, (long) early,
          (long) unpaid, (long) endedTwice, wrongStock, open.staleReads());
    }
    return result;
  }

  /** Records on {@code topic} so far: the sum of its partitions' end offsets. */
  private static long records(KafkaBroker broker, String topic) throws Exception {
    try (Admin admin = broker.admin()) {
      Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
      for (int partition = 0; partition < SHARDS; partition++) {
        latest.put(new TopicPartition(topic, partition), OffsetSpec.latest());
      }
      return admin.listOffsets(latest).all().get(30, TimeUnit.SECONDS).values().stream()
          .mapToLong(ListOffsetsResult.ListOffsetsResultInfo::offset).sum();
    }
  }

  /**
   * The CPU over a window: the machine's split ({@link CpuWindow}), each of {@code pids}' cores, and the cores of the
   * JIT compilers of the JVMs {@code nodePids}. Started and stopped on one thread (the generator's, at the edges of its
   * measured schedule), read after {@link #stop()} returned.
   */
  private static final class ProcessWindow {
    private final BenchDatabase db;
    private final List<Long> pids;
    private final List<Long> nodePids;
    private CpuWindow machine;
    private long[] ticksFrom;
    private long compilerTicksFrom;
    CpuWindow.Split split;
    double[] cores;
    double compilerCores;

    ProcessWindow(BenchDatabase db, List<Long> pids, List<Long> nodePids) {
      this.db = db;
      this.pids = pids;
      this.nodePids = nodePids;
    }

    void start() {
      machine = CpuWindow.start(db.postgresDataDir());
      ticksFrom = CpuWindow.processTicks(pids);
      compilerTicksFrom = CpuWindow.compilerTicks(nodePids);
    }

    void stop() {
      split = machine.stop(0);
      cores = cores(ticksFrom, CpuWindow.processTicks(pids), split.seconds());
      compilerCores = (CpuWindow.compilerTicks(nodePids) - compilerTicksFrom) / CpuWindow.TICKS_PER_SECOND
          / split.seconds();
    }
  }

  private static double[] cores(long[] from, long[] to, double seconds) {
    double[] cores = new double[from.length];
    for (int i = 0; i < from.length; i++) {
      cores[i] = (to[i] - from[i]) / CpuWindow.TICKS_PER_SECOND / seconds;
    }
    return cores;
  }

  private static double sum(double[] cores, int count) {
    double sum = 0;
    for (int i = 0; i < count; i++) {
      sum += cores[i];
    }
    return sum;
  }

  private static JsonArray round(double[] cores, int count) {
    JsonArray rounded = new JsonArray();
    for (int i = 0; i < count; i++) {
      rounded.add(Results.round(cores[i]));
    }
    return rounded;
  }

  private static String describe(double[] cores, int count) {
    List<String> each = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      each.add(String.format("%.2f", cores[i]));
    }
    return String.join(" + ", each);
  }
}
