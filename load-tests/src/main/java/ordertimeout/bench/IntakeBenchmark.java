package ordertimeout.bench;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import ordertimeout.store.LockedSkus;
import ordertimeout.clock.WallClock;
import ordertimeout.Service;
import ordertimeout.config.AppConfig;
import ordertimeout.order.CreateRequest;
import ordertimeout.order.IdempotencyKey;
import ordertimeout.order.NewOrder;
import ordertimeout.order.OrderIds;
import ordertimeout.order.OrderItem;
import ordertimeout.store.OrderCreates;
import ordertimeout.store.Pools;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * Intake: creates with fresh idempotency keys over HTTP, for a realistic SKU spread (1-3 items over
 * 1,000 SKUs) and a flash sale (every order on one SKU). For each: the service's own group-commit transaction
 * driven directly without HTTP (4 connections, groups of 64: what PostgreSQL takes here), the baseline (the same inserts and
 * reservations as one transaction per order, driven directly against PostgreSQL on 8 connections), wrk
 * at 64 connections (closed loop: the throughput at saturation), then Gatling (open model) at 30% of
 * that rate for 60 s after 5 s of warm-up at that rate (not counted), asserting p99 at most 50 ms and no failures.
 * The service runs in this JVM, after a warm-up. For both direct runs it prints what an order cost PostgreSQL: its CPU
 * (and this JVM's, the idle service's included), statement time, planning and WAL per order, and the statements that
 * took most.
 */
public final class IntakeBenchmark {
  private static final int BASELINE_CONNECTIONS = 8;
  /** The per-client caps never refuse here; they are still read and counted, as in the service. */
  private static final AppConfig.Clients UNCAPPED = new AppConfig.Clients(
      new AppConfig.ClientLimits(Long.MAX_VALUE, Long.MAX_VALUE, 7 * 24 * 3600, 0, 1), Map.of());
  /**
   * The service's group-commit transaction driven directly, without HTTP: what PostgreSQL can take on this box,
   * for comparison (as many transactions at once as the service runs by default: 2 intake instances, 2 groups each).
   */
  private static final int CEILING_CONNECTIONS = 4;
  private static final int CEILING_GROUP = 64;
  private static final int WRK_CONNECTIONS = 64;
  private static final int WARM_UP_SECONDS = 5;
  /**
   * Gatling tries these shares of wrk's closed-loop throughput, highest first, until one holds. A low
   * share: Gatling's own JVM shares the 2 cores with the service and PostgreSQL, and holds about 2,300
   * creates/s itself; higher shares missed p99 50 ms on one spread or the other. One share only, so that
   * run-all.sh stays within 15 minutes.
   */
  private static final double[] GATLING_SHARES_OF_WRK = {0.30};

  private final int wrkSeconds;
  private final int gatlingSeconds;
  private final BenchDatabase db;

  private IntakeBenchmark(int wrkSeconds, int gatlingSeconds, BenchDatabase db) {
    this.wrkSeconds = wrkSeconds;
    this.gatlingSeconds = gatlingSeconds;
    this.db = db;
  }

  /** Arguments: seconds per wrk and baseline run (10), seconds of each Gatling run (60). */
  public static void main(String[] args) throws Exception {
    int wrkSeconds = args.length > 0 ? Integer.parseInt(args[0]) : 10;
    int gatlingSeconds = args.length > 1 ? Integer.parseInt(args[1]) : 60;
    try (BenchDatabase db = BenchDatabase.fresh("bench-db-intake")) {
      new IntakeBenchmark(wrkSeconds, gatlingSeconds, db).run();
    }
    System.exit(0);
  }

  private void run() throws Exception {
    db.executeScript(
        "INSERT INTO inventory (sku, available) SELECT 'SKU-' || s, 1000000000 FROM generate_series(0, 999) s",
        "INSERT INTO inventory (sku, available) VALUES ('SKU-FLASH', 1000000000)");
    int port = Results.freePort();
    Map<String, String> environment = Map.of(
        "OT_HTTP_PORT", Integer.toString(port),
        "OT_ORDERS_MAX_UNPAID_PER_USER", "1000000",
        "OT_CLIENTS_OVERRIDES", Results.UNCAPPED_DEV_USER);
    AppConfig config = Results.serviceConfig(environment);
    Vertx vertx = Vertx.vertx(Service.vertxOptions());
    Service service = await(Service.start(vertx, config, db.setup.connectOptions()));
    String baseUrl = "http://127.0.0.1:" + port;
    JsonObject result = Results.header("intake");
    try {
      wrk(baseUrl, 1000, WRK_CONNECTIONS, WARM_UP_SECONDS); // JIT, pools, caches; not recorded
      // Statistics of tables that have orders in them, as autovacuum leaves them within a minute or so. Without them
      // the first scenario ran on plans for empty tables: group commits without HTTP took 6,000/s instead of 11,000.
      db.executeScript("ANALYZE");
      for (int skus : new int[] {1000, 1}) {
        String name = skus == 1 ? "flashSale" : "realistic";
        JsonObject scenario = new JsonObject();
        scenario.put("baseline", direct(vertx, db, skus, BASELINE_CONNECTIONS, 1, 1000 + skus % 23, wrkSeconds));
        scenario.put("groupCommitDirect",
            direct(vertx, db, skus, CEILING_CONNECTIONS, CEILING_GROUP, 1001 + skus % 23, wrkSeconds));
        JsonObject wrk = wrk(baseUrl, skus, WRK_CONNECTIONS);
        scenario.put("wrk", wrk);
        JsonArray gatlingRuns = new JsonArray();
        double held = 0;
        for (double share : GATLING_SHARES_OF_WRK) {
          int rate = (int) Math.max(50, wrk.getDouble("perSecond") * share);
          GatlingRun.Result gatling = GatlingRun.run("ordertimeout.bench.gatling.CreateOrdersSimulation", Map.of(
              "baseUrl", baseUrl, "rate", Integer.toString(rate), "duration", Integer.toString(gatlingSeconds),
              "skus", Integer.toString(skus)));
          gatlingRuns.add(gatling.toJson().put("rate", rate).put("seconds", gatlingSeconds));
          if (gatling.assertionsPassed()) {
            held = rate; // Gatling's mean throughput counts the silent warm-up's seconds too
            break;
          }
        }
        double baselineRate = scenario.getJsonObject("baseline").getDouble("perSecond");
        scenario.put("gatling", gatlingRuns)
            .put("heldPerSecond", Results.round(held))
            .put("heldVsBaseline", Results.round(held / baselineRate))
            .put("wrkVsBaseline", Results.round(wrk.getDouble("perSecond") / baselineRate))
            .put("wrkVsGroupCommitDirect",
                Results.round(wrk.getDouble("perSecond") / scenario.getJsonObject("groupCommitDirect").getDouble("perSecond")));
        result.put(name, scenario);
        System.out.println(name + ": " + scenario.encode());
      }
    } finally {
      await(service.stop());
    }
    checkStock();
    Results.write("intake", result);
    JsonObject realistic = result.getJsonObject("realistic");
    JsonObject flash = result.getJsonObject("flashSale");
    System.out.printf("intake: realistic: held %.0f/s for %d s with p99 <= 50 ms and no error (Gatling), wrk %.0f/s at %d connections "
            + "(p99 %.0f ms), baseline %.0f/s, held %.1fx baseline, group commit without HTTP %.0f/s (wrk at %.0f%% of it); "
            + "flash sale: held %.0f/s, wrk %.0f/s (p99 %.0f ms), baseline %.0f/s, held %.1fx baseline, group commit without HTTP "
            + "%.0f/s (wrk at %.0f%% of it); stock consistent%n",
        realistic.getDouble("heldPerSecond"), gatlingSeconds, realistic.getJsonObject("wrk").getDouble("perSecond"), WRK_CONNECTIONS,
        realistic.getJsonObject("wrk").getDouble("p99Ms"), realistic.getJsonObject("baseline").getDouble("perSecond"),
        realistic.getDouble("heldVsBaseline"), realistic.getJsonObject("groupCommitDirect").getDouble("perSecond"),
        100 * realistic.getDouble("wrkVsGroupCommitDirect"),
        flash.getDouble("heldPerSecond"), flash.getJsonObject("wrk").getDouble("perSecond"),
        flash.getJsonObject("wrk").getDouble("p99Ms"), flash.getJsonObject("baseline").getDouble("perSecond"),
        flash.getDouble("heldVsBaseline"), flash.getJsonObject("groupCommitDirect").getDouble("perSecond"),
        100 * flash.getDouble("wrkVsGroupCommitDirect"));
  }

  /** Creates driven directly against PostgreSQL: {@code connections} lanes, each one transaction of {@code group} orders at a time. */
  static JsonObject direct(Vertx vertx, BenchDatabase db, int skus, int connections, int group, int nodeId, int seconds) {
    OrderCreates creates = new OrderCreates(Pools.shared(vertx, "bench-direct-" + group, db.setup.connectOptions(), connections, 1,
        BenchDatabase.config(Map.of()).database().intake()), Duration.ofSeconds(1), new LockedSkus(Duration.ofSeconds(3)),
        order -> { throw new IllegalStateException("ids of one generator never collide"); });
    OrderIds ids = new OrderIds(nodeId, WallClock.SYSTEM);
    long stopAt = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    List<Long> latenciesMicros = java.util.Collections.synchronizedList(new ArrayList<>());
    PostgresCosts costs = PostgresCosts.start(db);
    List<Future<Integer>> lanes = new ArrayList<>();
    for (int lane = 0; lane < connections; lane++) {
      lanes.add(directLane(creates, ids, skus, group, stopAt, latenciesMicros, 0));
    }
    long started = System.nanoTime();
    int created = await(Future.all(lanes)).list().stream().mapToInt(count -> (Integer) count).sum();
    double elapsedSeconds = (System.nanoTime() - started) / 1e9;
    String heading = "intake, " + (skus == 1 ? "flash sale" : "realistic") + ", " + connections + " connections, groups of " + group
        + ", " + Results.round(created / elapsedSeconds) + " orders/s";
    JsonObject cost = costs.stop(heading, "order", created, 10);
    long[] sorted = latenciesMicros.stream().mapToLong(Long::longValue).sorted().toArray();
    JsonObject result = new JsonObject().put("perSecond", Results.round(created / elapsedSeconds)).put("orders", created)
        .put("p99Ms", Results.round(sorted[(int) (sorted.length * 0.99)] / 1000.0))
        .mergeIn(cost);
    return result;
  }

  private static Future<Integer> directLane(OrderCreates creates, OrderIds ids, int skus, int group, long stopAt, List<Long> latencies,
      int done) {
    if (System.nanoTime() > stopAt) {
      return Future.succeededFuture(done);
    }
    List<CreateRequest> requests = new ArrayList<>(group);
    for (int i = 0; i < group; i++) {
      long id = ids.next();
      requests.add(new CreateRequest(
          new NewOrder(id, OrderIds.shardOf(id, 64), "u-" + ThreadLocalRandom.current().nextInt(100_000), "physical",
              items(skus), 1800, Optional.of(1500)),
          new IdempotencyKey("direct", UUID.randomUUID().toString(), "h"), stopAt + TimeUnit.MINUTES.toNanos(1)));
    }
    long started = System.nanoTime();
    return creates.create(requests, 1_000_000, UNCAPPED).compose(results -> {
      latencies.add((System.nanoTime() - started) / 1000);
      int created = (int) results.stream().filter(Future::succeeded).count();
      return directLane(creates, ids, skus, group, stopAt, latencies, done + created);
    });
  }

  private static List<OrderItem> items(int skus) {
    if (skus == 1) {
      return List.of(new OrderItem("SKU-FLASH", 1));
    }
    ThreadLocalRandom random = ThreadLocalRandom.current();
    int first = random.nextInt(skus);
    OrderItem[] items = new OrderItem[1 + random.nextInt(3)];
    for (int i = 0; i < items.length; i++) {
      items[i] = new OrderItem("SKU-" + (first + i * 131) % skus, 1 + random.nextInt(3));
    }
    Arrays.sort(items, OrderItem.BY_SKU);
    return List.of(items);
  }

  private JsonObject wrk(String baseUrl, int skus, int connections) throws Exception {
    return wrk(baseUrl, skus, connections, wrkSeconds);
  }

  private JsonObject wrk(String baseUrl, int skus, int connections, int seconds) throws Exception {
    return Wrk.run(baseUrl, "create-order.lua", connections, seconds, Map.of("WRK_SKUS", Integer.toString(skus)))
        .toJson().put("connections", connections);
  }

  private void checkStock() {
    long wrong = db.stockInvariantViolations();
    if (wrong != 0) {
      throw new IllegalStateException("stock invariant broken on " + wrong + " SKUs");
    }
  }

  private static <T> T await(Future<T> future) {
    try {
      return future.toCompletionStage().toCompletableFuture().get(10, TimeUnit.MINUTES);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }


}
