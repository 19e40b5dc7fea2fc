package ordertimeout.bench;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import ordertimeout.support.ClusterSettings;
import ordertimeout.support.KafkaBroker;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;

/**
 * Steady state: orders created at a constant rate (open model) with timeouts of 5-15 s, 60% paid
 * before their deadline, each order's status read during its life (once, or {@code steady.readsPerOrder} times); then
 * the lateness of every timeout close (closed_at - close_at, both from the database clock), p50/p99/p99.9/max, and the
 * number closed early, which must be 0; every order must end closed or paid (none left unpaid), the stock invariant must hold, and no read sent
 * after its order's pay was answered may say anything but PAID.
 *
 * <p>The load comes from {@link OpenLoad} by default: a clock-scheduled Vert.x HTTP client on one event
 * loop in this JVM. Not Gatling, because on this project's 2-core machine Gatling's own JVM competed with
 * the service and PostgreSQL for the cores: at 2,000 creates/s it created only 71,515 of the 120,000
 * orders, its p99 was 43 s, and the lateness it left behind measured the overloaded box rather than the
 * service. {@code OpenLoad} costs a fraction of one core (its thread's CPU time is in the result) and
 * starts no second JVM. {@code -Dsteady.load=gatling} still runs the Gatling simulation
 * ({@code gatling/SteadyStateSimulation}) in a child Maven, for comparison.
 *
 * <p>The result also has the CPU split over the load window, the warm-up's last {@code steady.marksLeadSeconds} and
 * the measured schedule (this JVM, the generator thread within it, the benchmark's PostgreSQL, and any other process:
 * a busy neighbour makes the figures suspect) and this JVM's garbage collections in that window, and what PostgreSQL
 * spent in that window (pg_stat_statements): its statement time and WAL per create sent, and the statements that took
 * most, those of triggers included.
 */
public final class SteadyStateBenchmark {
  private static final int TOP_STATEMENTS = Integer.getInteger("steady.topStatements", 12);

  private SteadyStateBenchmark() {}

  /**
   * Arguments: creates per second (2000), seconds (60). System properties: steady.load (open, or gatling),
   * steady.connections (64), steady.pipelining (1 = none), steady.warmupSeconds (30), steady.warmupRate (the rate:
   * creates per second over the warm-up's first half, more to have their code compiled before the window at a low
   * rate), steady.marksLeadSeconds (0: how long before the measured schedule the load window's marks are taken),
   * steady.readsPerOrder (1), steady.readsPerSecond (0: status reads at a fixed rate besides, of orders created in the
   * last 10 s; its result goes to steady-state-reads.json) and steady.skus (1000: the SKUs the orders are spread over;
   * a few make a hot-SKU sale, its creates and pays on the same stock rows) for the open-model generator;
   * steady.kafka (false): true starts a broker of its own and runs the node in cluster mode on it; both runs the same
   * load once to warm the JIT up, then steady.rounds (2) times each way, alternating which goes first, each run on a
   * fresh database (and broker), and prints what cluster mode costs a create (see {@link #compareClusterCost});
   * steady.kafkaRelayIntervalMillis (the shipped default) sets how often its outbox relay runs, a run's length or more
   * to leave the relay out of what cluster mode costs; steady.nodeInOwnJvm (false): true runs the node in a JVM of its
   * own, as {@code java -jar} starts it, and prints its CPU and garbage collection pauses ({@link ServiceNode}).
   */
  public static void main(String[] args) throws Exception {
    int rate = args.length > 0 ? Integer.parseInt(args[0]) : 2000;
    int seconds = args.length > 1 ? Integer.parseInt(args[1]) : 60;
    String kafka = System.getProperty("steady.kafka", "false");
    boolean holds = true;
    if (kafka.equals("both")) {
      if (!"open".equals(System.getProperty("steady.load", "open"))) {
        throw new IllegalArgumentException("steady.kafka=both compares runs of the open-model generator only");
      }
      // Not counted: the JIT's warm-up. The first run in this JVM took 2,049 µs of the node's CPU per create, the
      // next ones 1,150-1,175 (2026-12-04, 400 creates/s).
      holds = runAlone(rate, seconds, "steady-state").holds();
      List<Run> off = new ArrayList<>();
      List<Run> on = new ArrayList<>();
      int rounds = Integer.getInteger("steady.rounds", 2);
      for (int round = 0; round < rounds; round++) {
        for (boolean withKafka : round % 2 == 0 ? new boolean[] {false, true} : new boolean[] {true, false}) {
          Run run = withKafka
              ? runInClusterMode(rate, seconds, "steady-state-cluster")
              : runAlone(rate, seconds, "steady-state");
          (withKafka ? on : off).add(run);
          holds &= run.holds();
        }
      }
      compareClusterCost(rate, off, on);
    } else {
      // a run with fixed-rate reads is another workload: its result beside the plain steady state's, not over it
      String resultName = Integer.getInteger("steady.readsPerSecond", 0) > 0 ? "steady-state-reads" : "steady-state";
      holds = (Boolean.parseBoolean(kafka) ? runInClusterMode(rate, seconds, resultName)
          : runAlone(rate, seconds, resultName)).holds();
    }
    System.exit(holds ? 0 : 1);
  }

  /** A run's verdict (see {@link #run}) and the result it wrote. */
  private record Run(boolean holds, JsonObject result) {
    /** CPU per create sent in the measured window, in microseconds: the node's JVM without the generator. */
    double nodeMicros() {
      JsonObject cpu = result.getJsonObject("cpu");
      return perCreate(cpu.containsKey("nodeJvm") ? nodeJvmCores()
          : cpu.getDouble("jvmCores") - cpu.getDouble("generatorCores"));
    }

    double postgresMicros() {
      return perCreate(result.getJsonObject("cpu").getDouble("postgresCores"));
    }

    /** Every other process: the broker's JVM in cluster mode, else a neighbour's noise. */
    double otherMicros() {
      return perCreate(result.getJsonObject("cpu").getDouble("otherProcessesCores") - nodeJvmCores());
    }

    /** The node's JVM when it ran in its own (among the other processes), else 0. */
    private double nodeJvmCores() {
      JsonObject nodeJvm = result.getJsonObject("cpu").getJsonObject("nodeJvm");
      return nodeJvm == null ? 0 : nodeJvm.getDouble("cores");
    }

    double totalMicros() {
      return nodeMicros() + postgresMicros() + otherMicros();
    }

    double latency(String type, String percentile) {
      return result.getJsonObject("openLoad").getJsonObject(type + "LatencyMs").getDouble(percentile);
    }

    private double perCreate(double cores) {
      long sent = result.getJsonObject("openLoad").getLong("sent");
      return sent == 0 ? 0 : cores * result.getJsonObject("cpu").getDouble("seconds") * 1e6 / sent;
    }
  }

  private static Run runAlone(int rate, int seconds, String resultName) throws Exception {
    try (BenchDatabase db = BenchDatabase.fresh("bench-db-steady")) {
      return run(db, rate, seconds, null, resultName);
    }
  }

  private static Run runInClusterMode(int rate, int seconds, String resultName) throws Exception {
    try (KafkaBroker broker = KafkaBroker.startNew(); BenchDatabase db = BenchDatabase.fresh("bench-db-steady")) {
      return run(db, rate, seconds, broker.bootstrapServers(), resultName);
    }
  }

  /**
   * What cluster mode costs one node: CPU per create sent, all processes but the generator (the node's JVM,
   * PostgreSQL, the broker), with Kafka off and on, the runs' mean ratio, and each way's latencies. Near its limit the
   * machine is full either way, so CPU per create, not the rate, tells the cost apart. Written to
   * steady-state-cluster-cost.json.
   */
  private static void compareClusterCost(int rate, List<Run> off, List<Run> on) {
    double offMean = off.stream().mapToDouble(Run::totalMicros).average().orElse(0);
    double onMean = on.stream().mapToDouble(Run::totalMicros).average().orElse(0);
    JsonObject result = Results.header("steady-state-cluster-cost")
        .put("ratePerSecond", rate)
        .put("off", costs(off))
        .put("on", costs(on))
        .put("meanCpuMicrosPerCreateOff", Results.round(offMean))
        .put("meanCpuMicrosPerCreateOn", Results.round(onMean))
        .put("clusterModeExtraPercent", Results.round(offMean == 0 ? 0 : (onMean / offMean - 1) * 100));
    Results.write("steady-state-cluster-cost", result);
    System.out.printf("steady-state cluster cost: %d creates/s, CPU per create sent (node JVM without the generator + "
            + "PostgreSQL + other processes, the broker) Kafka off %s, on %s µs: mean %.0f off, %.0f on, cluster mode "
            + "%+.0f%%; creates p50/p99 off %s, on %s ms; pays p99 off %s, on %s ms; reads p99 off %s, on %s ms%n",
        rate, describe(off), describe(on), offMean, onMean, result.getDouble("clusterModeExtraPercent"),
        latencies(off, "create"), latencies(on, "create"), p99s(off, "pay"), p99s(on, "pay"),
        p99s(off, "read"), p99s(on, "read"));
  }

  private static JsonArray costs(List<Run> runs) {
    JsonArray costs = new JsonArray();
    for (Run run : runs) {
      costs.add(new JsonObject().put("nodeMicros", Results.round(run.nodeMicros()))
          .put("postgresMicros", Results.round(run.postgresMicros()))
          .put("otherMicros", Results.round(run.otherMicros()))
          .put("createP50Ms", run.latency("create", "p50")).put("createP99Ms", run.latency("create", "p99"))
          .put("payP99Ms", run.latency("pay", "p99")).put("readP99Ms", run.latency("read", "p99"))
          .put("latenessP99Ms", run.result().getDouble("latenessP99Ms")));
    }
    return costs;
  }

  private static String describe(List<Run> runs) {
    return runs.stream().map(r -> String.format("%.0f+%.0f+%.0f", r.nodeMicros(), r.postgresMicros(), r.otherMicros()))
        .collect(Collectors.joining(", "));
  }

  private static String latencies(List<Run> runs, String type) {
    return runs.stream().map(r -> String.format("%.1f/%.0f", r.latency(type, "p50"), r.latency(type, "p99")))
        .collect(Collectors.joining(", "));
  }

  private static String p99s(List<Run> runs, String type) {
    return runs.stream().map(r -> String.format("%.0f", r.latency(type, "p99"))).collect(Collectors.joining(", "));
  }

  /**
   * True when every order ended once, none early, none left unpaid, and the stock adds up. With {@code kafkaBootstrap},
   * the node runs in cluster mode on that broker (timers through Kafka, shard ownership by its group, the outbox relay),
   * alone in its group, so it owns every shard: what cluster mode costs one node.
   */
  private static Run run(BenchDatabase db, int rate, int seconds, String kafkaBootstrap, String resultName)
      throws Exception {
    int skus = Integer.getInteger("steady.skus", OpenLoad.SKUS);
    if (skus < 1) {
      throw new IllegalArgumentException("steady.skus is " + skus + "; the orders need at least one SKU");
    }
    db.executeScript("INSERT INTO inventory (sku, available) SELECT 'SKU-' || s, 1000000000 FROM generate_series(0, "
        + (skus - 1) + ") s");
    Map<String, String> environment = new HashMap<>(Map.of(
        "OT_ORDERS_MAX_UNPAID_PER_USER", "1000000", "OT_CLIENTS_OVERRIDES", Results.UNCAPPED_DEV_USER));
    if (kafkaBootstrap != null) {
      environment.putAll(new ClusterSettings(kafkaBootstrap).forNode(1));
      environment.remove("OT_KAFKA_RELAY_INTERVAL_MILLIS"); // the tests' quicker relay; the shipped default here
      String relayInterval = System.getProperty("steady.kafkaRelayIntervalMillis");
      if (relayInterval != null) {
        environment.put("OT_KAFKA_RELAY_INTERVAL_MILLIS", relayInterval);
      }
    }
    boolean nodeInOwnJvm = Boolean.getBoolean("steady.nodeInOwnJvm");
    if (nodeInOwnJvm && "gatling".equals(System.getProperty("steady.load", "open"))) {
      throw new IllegalArgumentException("steady.nodeInOwnJvm measures the node with the open-model generator only");
    }
    ServiceNode node = nodeInOwnJvm
        ? ServiceNode.inOwnJvm(environment, db.setup.connectOptions())
        : ServiceNode.inThisJvm(environment, db.setup.connectOptions());
    int port = node.port();
    boolean useGatling = "gatling".equals(System.getProperty("steady.load", "open"));
    int connections = Integer.getInteger("steady.connections", 64);
    int pipelining = Integer.getInteger("steady.pipelining", 1);
    int readsPerOrder = Integer.getInteger("steady.readsPerOrder", 1);
    int readsPerSecond = Integer.getInteger("steady.readsPerSecond", 0);
    int warmupSeconds = useGatling ? 0 : Integer.getInteger("steady.warmupSeconds", 30);
    int warmupRate = Integer.getInteger("steady.warmupRate", rate);
    int marksLeadSeconds = Math.min(warmupSeconds, Integer.getInteger("steady.marksLeadSeconds", 0));
    GatlingRun.Result gatling = null;
    OpenLoad.Result open = null;
    Path postgresDir = db.postgresDataDir();
    AtomicReference<CompletableFuture<CpuWindow>> cpu = new AtomicReference<>();
    AtomicReference<CompletableFuture<CpuWindow.Split>> cpuSplit = new AtomicReference<>();
    AtomicReference<CompletableFuture<Void>> counting = new AtomicReference<>();
    AtomicReference<CompletableFuture<JsonObject>> statementCosts = new AtomicReference<>();
    AtomicReference<CompletableFuture<JsonObject>> waits = new AtomicReference<>();
    AtomicReference<ServiceNode.Mark> nodeMark = new AtomicReference<>();
    AtomicReference<CompletableFuture<JsonObject>> nodeJvm = new AtomicReference<>();
    CpuWindow.Split split;
    long closedBySweep;
    try {
      if (useGatling) {
        CpuWindow window = CpuWindow.start(postgresDir);
        gatling = GatlingRun.run("ordertimeout.bench.gatling.SteadyStateSimulation", Map.of(
            "baseUrl", "http://127.0.0.1:" + port, "rate", Integer.toString(rate), "duration", Integer.toString(seconds)));
        split = window.stop(0);
      } else {
        // The CPU split, PostgreSQL's statement costs and the sessions' waits cover the warm-up's last marksLead and
        // the measured schedule, to its last create sent. Taking the marks disturbs the load (a JDBC connection and
        // pg_stat_statements' reset, a walk of /proc): at 20,000 reads/s, taken when the window began, they held up
        // its first second (its reads' p99 81-729 ms in three runs, 24-93 without the marks; 2026-12-06), so that
        // run takes them 10 s before. By default they are taken at the window's start, so that the figures cover the
        // window alone: 10 s earlier, after 30 s of warm-up at 600 creates/s, the JIT compilers were still busy there
        // (0.18 cores against 0.11, one run each). They are taken off the generator's event loop, and what can be made
        // ready before the warm-up is (a setting every PostgreSQL session reloads, the sampler's connection).
        db.prepareStatementCounts();
        WaitSampler sampler = WaitSampler.start(db);
        OpenLoad.Settings settings = new OpenLoad.Settings("127.0.0.1", List.of(port), rate, seconds, warmupSeconds,
            connections, pipelining, "SKU-", skus, readsPerOrder, readsPerSecond, warmupRate);
        open = OpenLoad.run(settings, Duration.ofSeconds(marksLeadSeconds),
            () -> {
              cpu.set(CompletableFuture.supplyAsync(() -> CpuWindow.start(postgresDir)));
              nodeMark.set(node.mark());
              counting.set(CompletableFuture.runAsync(db::resetStatementCounts));
              sampler.restart();
            },
            () -> {
              cpuSplit.set(cpu.get().thenApplyAsync(window -> window.stop(0)));
              if (nodeInOwnJvm) {
                nodeJvm.set(CompletableFuture.supplyAsync(() -> node.since(nodeMark.get())));
              }
              waits.set(CompletableFuture.supplyAsync(() -> stopQuietly(sampler)));
              statementCosts.set(counting.get().thenApplyAsync(counted -> db.statementCosts(TOP_STATEMENTS)));
            });
        split = cpuSplit.get().get(1, TimeUnit.MINUTES).withGenerator(open.cpuSeconds());
      }
      long waitUntil = System.currentTimeMillis() + 60_000;
      while (db.number("SELECT count(*) FROM orders WHERE status = 'UNPAID'") > 0 && System.currentTimeMillis() < waitUntil) {
        Thread.sleep(200);
      }
      closedBySweep = node.sweepCloses();
    } finally {
      node.close();
    }
    double inDatabase = db.number("SELECT count(*) FROM orders");
    double paid = db.number("SELECT count(*) FROM orders WHERE status = 'PAID'");
    double closed = db.number("SELECT count(*) FROM orders WHERE close_reason = 'TIMEOUT'");
    double early = db.number("SELECT count(*) FROM orders WHERE closed_at < close_at");
    double unpaid = db.number("SELECT count(*) FROM orders WHERE status = 'UNPAID'");
    long wrongStock = db.stockInvariantViolations();
    // Lateness over the closes of the orders created by the measured schedule (the warm-up's are left out).
    double measuredFrom = open == null ? 0 : open.measuredFromMillis() / 1000.0;
    double created = open == null ? inDatabase : open.created();
    long measuredClosed = (long) db.number("SELECT count(*) FROM orders WHERE close_reason = 'TIMEOUT' AND created_at >= to_timestamp(?)",
        measuredFrom);
    double endedTwice = db.endedMoreThanOnce();
    JsonObject result = Results.header("steady-state")
        .put("ratePerSecond", rate)
        .put("readsPerOrder", readsPerOrder)
        .put("readsPerSecond", readsPerSecond)
        .put("kafka", kafkaBootstrap != null)
        .put("seconds", seconds)
        .put("load", useGatling ? "gatling" : "open")
        .put("planned", (long) rate * seconds)
        .put("cpu", nodeJvm.get() == null ? split.toJson()
            : split.toJson().put("nodeJvm", nodeJvm.get().get(1, TimeUnit.MINUTES)));
    JsonObject statements = null;
    if (useGatling) {
      result.put("gatling", gatling.toJson());
    } else {
      result.put("openLoad", open.toJson().put("connections", connections).put("pipelining", pipelining));
      statements = statementCosts.get().get(1, TimeUnit.MINUTES);
      result.put("postgresStatements", statements).put("postgresSessions", waits.get().get(1, TimeUnit.MINUTES));
    }
    result
        .put("created", (long) created)
        .put("ordersInDatabase", (long) inDatabase)
        .put("paid", (long) paid)
        .put("closedOnTimeout", (long) closed)
        .put("closedBySweep", closedBySweep)
        .put("leftUnpaid", (long) unpaid)
        .put("closedEarly", (long) early)
        .put("endedMoreThanOnce", (long) endedTwice)
        .put("stockInvariantBroken", wrongStock)
        .put("warmupSeconds", warmupSeconds)
        .put("warmupRatePerSecond", warmupRate)
        .put("marksLeadSeconds", marksLeadSeconds)
        .put("latenessOf", measuredClosed)
        .put("latenessP50Ms", lateness(db, 0.5, measuredFrom))
        .put("latenessP99Ms", lateness(db, 0.99, measuredFrom))
        .put("latenessP999Ms", lateness(db, 0.999, measuredFrom))
        .put("latenessMaxMs", lateness(db, 1.0, measuredFrom))
        .put("latenessHistogram", db.latenessHistogram("close_reason = 'TIMEOUT' AND created_at >= to_timestamp(?)", measuredFrom));
    if (open != null) {
      // per second of the deadlines from the measured schedule's start: the closes and their lateness, for the report's chart
      result.put("latenessPerSecond", db.latenessPerSecond(measuredFrom, seconds + 60,
          "close_reason = 'TIMEOUT' AND created_at >= to_timestamp(?)", measuredFrom));
    }
    Results.write(resultName, result);
    String load = useGatling
        ? String.format("Gatling p99 %.0f ms, %d failed", gatling.p99Ms(), gatling.failed())
        : String.format("open model: %d of %d sent on time, create p50 %.1f ms, p99 %.1f ms, max %.1f ms, %d create errors, "
                + "%d pays refused (closed), pay p50 %.1f ms, p99 %.1f ms, %d pay errors; %d status reads p50 %.1f ms, "
                + "p99 %.1f ms, max %.1f ms, %d read errors, %d stale, %d sent late by the generator",
            open.sent() - open.lateSends(), open.planned(),
            OpenLoad.Result.ms(open.createMicros().getValueAtPercentile(50)),
            OpenLoad.Result.ms(open.createMicros().getValueAtPercentile(99)),
            OpenLoad.Result.ms(open.createMicros().getMaxValue()),
            open.createErrors(), open.payRefusedClosed(),
            OpenLoad.Result.ms(open.payMicros().getValueAtPercentile(50)),
            OpenLoad.Result.ms(open.payMicros().getValueAtPercentile(99)), open.payErrors(), open.reads(),
            OpenLoad.Result.ms(open.readMicros().getValueAtPercentile(50)),
            OpenLoad.Result.ms(open.readMicros().getValueAtPercentile(99)),
            OpenLoad.Result.ms(open.readMicros().getMaxValue()), open.readErrors(), open.staleReads(),
            open.readsLateByScheduler());
    System.out.printf("steady-state%s: %d creates/s for %d s after a %d s warm-up (%s); %d created of %d planned; all orders: %d paid, "
            + "%d closed on timeout; lateness (%d closes) "
            + "p50 %.1f ms, p99 %.1f ms, p99.9 %.1f ms, max %.1f ms; closed early %d; left unpaid %d; stock %s; "
            + "CPU (cores) JVM %.2f (generator %.2f, JIT compilers %.2f), PostgreSQL %.2f, other processes %.2f; "
            + "GC %d pauses, %d ms%n",
        kafkaBootstrap == null ? "" : " (cluster mode, the broker's JVM among the other processes)", rate, seconds, warmupSeconds,
        load, (long) created, (long) rate * seconds, (long) paid, (long) closed, measuredClosed,
        result.getDouble("latenessP50Ms"), result.getDouble("latenessP99Ms"), result.getDouble("latenessP999Ms"),
        result.getDouble("latenessMaxMs"), (long) early, (long) unpaid, wrongStock == 0 ? "consistent" : "BROKEN",
        split.jvmCores(), split.generatorCores(), split.compilerCores(), split.postgresCores(), split.otherCores(),
        split.gcCount(), split.gcMillis());
    if (statements != null) {
      BenchDatabase.printStatements("steady-state", statements, "create sent", open.sentWhileMarked());
      WaitSampler.print("steady-state", result.getJsonObject("postgresSessions"));
    }
    JsonObject ownJvm = result.getJsonObject("cpu").getJsonObject("nodeJvm");
    if (ownJvm != null) {
      System.out.printf("steady-state: the node in its own JVM: %.2f cores (among the other processes above); "
              + "%d GC pauses, %.1f ms in all, the longest %.1f ms (%s)%n", ownJvm.getDouble("cores"),
          ownJvm.getInteger("gcPauses"), ownJvm.getDouble("gcPauseMillis"), ownJvm.getDouble("gcPauseMaxMillis"),
          ownJvm.getString("gcLog"));
    }
    double neighbours = split.otherCores() - (ownJvm == null ? 0 : ownJvm.getDouble("cores"));
    if (neighbours > 0.1 && kafkaBootstrap == null) {
      System.out.printf("steady-state: WARNING: other processes used %.2f cores during the run%s; the figures are not the service's alone%n",
          neighbours, useGatling ? " (Gatling's JVM among them)" : "");
    }
    long staleReads = open == null ? 0 : open.staleReads();
    boolean holds = early == 0 && unpaid == 0 && endedTwice == 0 && wrongStock == 0 && staleReads == 0;
    if (!holds) {
      System.out.printf("steady-state: FAILED: %d closed early, %d left unpaid, %d ended more than once, %d SKUs with wrong stock, "
          + "%d reads not PAID after their pay was answered%n", (long) early, (long) unpaid, (long) endedTwice, wrongStock, staleReads);
    }
    return new Run(holds, result);
  }

  private static JsonObject stopQuietly(WaitSampler sampler) {
    try {
      return sampler.stop(8);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return new JsonObject();
    }
  }

  private static double lateness(BenchDatabase db, double fraction, double createdFromEpochSeconds) {
    return Math.round(db.number("""
        SELECT coalesce(percentile_cont(?) WITHIN GROUP (ORDER BY extract(epoch FROM closed_at - close_at) * 1000), 0)
        FROM orders WHERE close_reason = 'TIMEOUT' AND created_at >= to_timestamp(?)""", fraction, createdFromEpochSeconds) * 10) / 10.0;
  }
}
