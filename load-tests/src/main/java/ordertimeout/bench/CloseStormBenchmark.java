package ordertimeout.bench;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import ordertimeout.clock.WallClock;
import ordertimeout.Service;
import ordertimeout.bus.DueOrders;
import ordertimeout.config.AppConfig;
import ordertimeout.store.DeadlineStore;
import ordertimeout.store.EventStore;
import ordertimeout.store.Pools;

import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Close storm: N unpaid orders (1-3 items over 1,000 SKUs) all due in the same second. Measures the
 * drain rate (closes per second from the deadline until the last close commits, each with its stock
 * release, log line and outbox row) and the lateness of every close, for three ways of closing the
 * same data in the same run:
 * <ul>
 *   <li>service: the real service, its wheel reloaded from PostgreSQL, closing on its own;</li>
 *   <li>ceiling: the service's batched close transaction driven directly (batches of 1,000, 4 at once);</li>
 *   <li>ceiling with dispatch: the same, while the service's event dispatcher gives the closes' events their feed
 *   positions alongside, as it does in the service (the service's drain is still compared with the ceiling above; this
 *   one tells how much of the gap is the events' way out);</li>
 *   <li>classic: a scan of overdue orders and one transaction per order on 8 connections.</li>
 * </ul>
 * After each run it checks every order closed exactly once, none early, and all stock back.
 *
 * <p>While the service drains, a shop's live traffic goes on ({@code liveCreatesPerSecond}, 0 for none): {@link OpenLoad}'s
 * open-model creates of their own SKUs, 60% of them paid and each read once, their latency from when each was due. The
 * warm-up of that load runs while the service reloads and waits for the deadline; its measured schedule starts at the
 * deadline and lasts the drain's expected length. The run also reports this JVM's heap: after the reload (after a full
 * collection: the wheel holding every deadline) and its peak during the drain. Over the drain it samples what the
 * service's PostgreSQL sessions are doing ({@link WaitSampler}) and counts the live creates' and pays' slow waits and
 * transactions at the node's group commits ({@link GroupCommitTimes}).
 *
 * <p>Before the measured runs a smaller storm ({@code -Dstorm.warmUpOrders}, 50,000; 0 for none) goes through the service
 * once, not measured: a service that has never closed an order compiles its close path during the first storm it meets
 * (in a 200,000-order drain without it, 46% of this JVM's CPU samples were the JIT compiler's threads; async-profiler,
 * 2026-12-05), which a service that closed orders all day before a flash sale has done long before. Its live traffic
 * runs at {@code -Dstorm.warmUpLiveRate} creates/s (500, or the live rate if that is higher), so that the creates',
 * pays' and reads' code is compiled too: at the live rate of 100/s the JIT compilers still took 0.09-0.14 cores of the
 * measured drain, 0.03-0.07 after it (two and three runs, 2026-12-05).
 */
public final class CloseStormBenchmark {
  private static final int SKUS = 1000;
  private static final long STOCK_PER_SKU = 1_000_000;
  private static final int IN_FLIGHT = 4;
  private static final int TOP_STATEMENTS = Integer.getInteger("storm.topStatements", 6);
  private static final int CLASSIC_CONNECTIONS = 8;
  private static final long CLASSIC_TIME_CAP_MILLIS = 20_000;
  private static final Instant FAR_AWAY = Instant.parse("2099-01-01T00:00:00Z");
  /** The storm's own orders (the live load's come through the service, as another client, with ids far above these). */
  private static final String STORM_ORDERS = "client = 'bench'";
  private static final String LIVE_SKU_PREFIX = "LIVE-";
  private static final int WARM_UP_ORDERS = Integer.getInteger("storm.warmUpOrders", 50_000);
  private static final int WARM_UP_LIVE_RATE = Integer.getInteger("storm.warmUpLiveRate", 500);

  private final int orders;
  private final int rounds;
  private final int batchSize;
  private final int liveRate;
  private final BenchDatabase db;
  private final Vertx vertx = Vertx.vertx();

  private CloseStormBenchmark(int orders, int rounds, int batchSize, int liveRate, BenchDatabase db) {
    this.orders = orders;
    this.rounds = rounds;
    this.batchSize = batchSize;
    this.liveRate = liveRate;
    this.db = db;
  }

  /**
   * Arguments: orders (200000), rounds (3), close batch size (the service's timer.batchSize, 4000), live creates per second
   * during the service's drain (100; 0 for none).
   */
  public static void main(String[] args) throws Exception {
    int orders = args.length > 0 ? Integer.parseInt(args[0]) : 200_000;
    int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 3;
    int batchSize = args.length > 2 ? Integer.parseInt(args[2]) : 4000;
    int liveRate = args.length > 3 ? Integer.parseInt(args[3]) : 100;
    try (BenchDatabase db = BenchDatabase.fresh()) {
      CloseStormBenchmark bench = new CloseStormBenchmark(orders, rounds, batchSize, liveRate, db);
      try {
        bench.run();
      } finally {
        bench.vertx.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
      }
    }
    System.exit(0);
  }

  private void run() throws Exception {
    warmUpService();
    List<JsonObject> ceilings = new ArrayList<>();
    List<JsonObject> ceilingsWithDispatch = new ArrayList<>();
    List<JsonObject> services = new ArrayList<>();
    for (int round = 0; round < rounds; round++) {
      JsonObject ceiling = measure("ceiling", this::driveBatched);
      ceilings.add(ceiling);
      ceilingsWithDispatch.add(measure("ceiling with dispatch", this::driveBatchedWithDispatch));
      services.add(measureService("service", ceiling.getDouble("drainSeconds")));
    }
    JsonObject classic = measure("classic", this::driveOnePerOrder);
    JsonObject ceiling = median(ceilings);
    JsonObject ceilingWithDispatch = median(ceilingsWithDispatch);
    JsonObject service = median(services);
    double serviceRate = service.getDouble("closesPerSecond");
    JsonObject result = Results.header("close-storm")
        .put("orders", orders)
        .put("rounds", rounds)
        .put("warmUpOrders", Math.min(orders, WARM_UP_ORDERS))
        .put("warmUpLiveRate", WARM_UP_ORDERS <= 0 ? 0 : warmUpLiveRate())
        .put("batchSize", batchSize)
        .put("service", service)
        .put("ceiling", ceiling)
        .put("ceilingWithDispatch", ceilingWithDispatch)
        .put("classic", classic)
        .put("serviceVsCeiling", Results.round(serviceRate / ceiling.getDouble("closesPerSecond")))
        .put("serviceVsCeilingWithDispatch",
            Results.round(serviceRate / ceilingWithDispatch.getDouble("closesPerSecond")))
        .put("serviceVsClassic", Results.round(serviceRate / classic.getDouble("closesPerSecond")));
    Results.write("close-storm", result);
    System.out.printf("close-storm: %d orders, median of %d; service %.0f closes/s (lateness p50 %.0f ms, p99 %.0f ms, "
            + "max %.0f ms); ceiling %.0f/s (service at %.0f%%); ceiling with the event dispatcher alongside %.0f/s "
            + "(service at %.0f%%); classic %.0f/s (service %.1fx); every run: all closed once, none early, "
            + "stock consistent%n",
        orders, rounds, serviceRate, service.getDouble("latenessP50Ms"), service.getDouble("latenessP99Ms"),
        service.getDouble("latenessMaxMs"), ceiling.getDouble("closesPerSecond"),
        100 * result.getDouble("serviceVsCeiling"), ceilingWithDispatch.getDouble("closesPerSecond"),
        100 * result.getDouble("serviceVsCeilingWithDispatch"), classic.getDouble("closesPerSecond"),
        result.getDouble("serviceVsClassic"));
    JsonObject heap = service.getJsonObject("heap");
    System.out.printf("close-storm: this JVM's heap %d MB after the reload (after a full collection), peak %d MB during the drain, "
        + "of %d MB%n", heap.getLong("afterReloadMb"), heap.getLong("peakDuringDrainMb"), heap.getLong("maxMb"));
    JsonObject live = service.getJsonObject("live");
    if (live != null) {
      JsonObject creates = live.getJsonObject("createLatencyMs");
      JsonObject pays = live.getJsonObject("payLatencyMs");
      JsonObject reads = live.getJsonObject("readLatencyMs");
      System.out.printf("close-storm: live traffic during the service's drain (open model, %d creates/s for %d s): create p50 %.1f ms, "
              + "p99 %.1f ms, max %.1f ms, %d errors; pay p50 %.1f ms, p99 %.1f ms, %d errors; status read p50 %.1f ms, p99 %.1f ms, "
              + "%d errors, %d stale%n",
          liveRate, live.getInteger("seconds"), creates.getDouble("p50"), creates.getDouble("p99"), creates.getDouble("max"),
          live.getLong("createErrors"), pays.getDouble("p50"), pays.getDouble("p99"), live.getLong("payErrors"),
          reads.getDouble("p50"), reads.getDouble("p99"), live.getLong("readErrors"), live.getLong("staleReads"));
    }
  }

  /** A smaller storm through the service, on its own data, its figures not kept. */
  private void warmUpService() throws Exception {
    if (WARM_UP_ORDERS <= 0) {
      return;
    }
    CloseStormBenchmark warmUp =
        new CloseStormBenchmark(Math.min(orders, WARM_UP_ORDERS), 1, batchSize, warmUpLiveRate(), db);
    try {
      warmUp.measureService("service warm-up", 5);
    } finally {
      warmUp.vertx.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
    }
  }

  /** No live traffic in the warm-up either when the measured runs have none. */
  private int warmUpLiveRate() {
    return liveRate == 0 ? 0 : Math.max(liveRate, WARM_UP_LIVE_RATE);
  }

  /** The run with the median drain rate. */
  private static JsonObject median(List<JsonObject> runs) {
    List<JsonObject> sorted = new ArrayList<>(runs);
    sorted.sort(java.util.Comparator.comparingDouble(run -> run.getDouble("closesPerSecond")));
    return sorted.get(sorted.size() / 2);
  }

  private interface Driver {
    Future<Void> drive(DeadlineStore store, Pool pool);
  }

  private JsonObject measure(String name, Driver driver) throws Exception {
    seed();
    Instant deadline = armDeadline(leadSeconds(0));
    Pool pool = Pools.shared(vertx, "bench-driver", db.setup.connectOptions(), CLASSIC_CONNECTIONS, 1,
        BenchDatabase.config(Map.of()).database().deadlines());
    DeadlineStore store = new DeadlineStore(pool, WallClock.SYSTEM);
    sleepUntil(deadline);
    PostgresCosts costs = PostgresCosts.start(db);
    driver.drive(store, pool).toCompletionStage().toCompletableFuture().get(10, TimeUnit.MINUTES);
    JsonObject cost = costs.stop("close-storm " + name, "close", (long) db.number("SELECT count(*) FROM orders WHERE status = 'CLOSED'"),
        TOP_STATEMENTS);
    pool.close().toCompletionStage().toCompletableFuture().get();
    return report(name, deadline).put("cost", cost);
  }

  /** {@code ceilingDrainSeconds}: how long the ceiling took to drain the same storm; the live load's measured schedule lasts that long. */
  private JsonObject measureService(String name, double ceilingDrainSeconds) throws Exception {
    seed();
    Instant deadline = armDeadline(leadSeconds(20));
    int port = Results.freePort();
    Map<String, String> environment = Map.of(
        "OT_HTTP_PORT", Integer.toString(port),
        "OT_TIMER_BATCH_SIZE", Integer.toString(batchSize),
        "OT_ORDERS_MAX_UNPAID_PER_USER", "1000000",
        "OT_CLIENTS_OVERRIDES", Results.UNCAPPED_DEV_USER);
    AppConfig config = Results.serviceConfig(environment);
    Vertx serviceVertx = Vertx.vertx(Service.vertxOptions());
    Service service = Service.start(serviceVertx, config, db.setup.connectOptions())
        .toCompletionStage().toCompletableFuture().get(5, TimeUnit.MINUTES);
    long reloadMillis = service.stats().snapshot().lastReloadMillis();
    if (Instant.now().isAfter(deadline)) {
      throw new IllegalStateException("the reload took past the deadline; raise the lead time");
    }
    MemoryMXBean memory = ManagementFactory.getMemoryMXBean();
    System.gc(); // before the deadline: what stays is mostly the wheel with every deadline in it
    long heapAfterReload = memory.getHeapMemoryUsage().getUsed();
    int liveSeconds = (int) Math.max(5, Math.round(ceilingDrainSeconds));
    WaitSampler sampler = WaitSampler.start(db);
    CompletableFuture<OpenLoad.Result> live = startLiveLoad(port, deadline, liveSeconds);
    sleepUntil(deadline);
    sampler.restart();
    GroupCommitTimes groupCommits = GroupCommitTimes.start(service.stats());
    PostgresCosts costs = PostgresCosts.start(db);
    long heapPeak = 0;
    long stopAt = System.currentTimeMillis() + 10 * 60_000;
    // The service's own count of its timeout closes first: a count of the unpaid orders every 100 ms took 2.4 s of a
    // PostgreSQL core each, among a million rows just updated (2026-12-02). The live load's closes count there too, so the
    // database says when the storm's last order closed.
    while ((timeoutCloses(service) < orders || stormOrdersLeftUnpaid()) && System.currentTimeMillis() < stopAt) {
      heapPeak = Math.max(heapPeak, memory.getHeapMemoryUsage().getUsed());
      Thread.sleep(100);
    }
    JsonObject cost = costs.stop("close-storm " + name, "close", orders, TOP_STATEMENTS);
    JsonObject waits = sampler.stop(TOP_STATEMENTS);
    WaitSampler.print("close-storm " + name, waits);
    JsonObject groupCommitTimes = groupCommits.stop();
    GroupCommitTimes.print("close-storm " + name, groupCommitTimes);
    long lastEventAtDrainEnd = (long) db.number("SELECT coalesce(max(event_id), 0) FROM outbox");
    long eventsWaitingAtDrainEnd = (long) db.number("SELECT count(*) FROM outbox_pending");
    double eventsPositionedSeconds = secondsUntilPositioned(lastEventAtDrainEnd, deadline);
    System.out.printf("close-storm %s: %d events waited for their feed position when the last order closed; those "
        + "had it %.1f s after the deadline%n", name, eventsWaitingAtDrainEnd, eventsPositionedSeconds);
    OpenLoad.Result liveResult = live == null ? null : live.get(liveSeconds + 180L, TimeUnit.SECONDS);
    service.stop().toCompletionStage().toCompletableFuture().get(1, TimeUnit.MINUTES);
    JsonObject result = report(name, deadline).put("reloadMillis", reloadMillis).put("cost", cost)
        .put("eventsWaitingAtDrainEnd", eventsWaitingAtDrainEnd).put("eventsPositionedSeconds", eventsPositionedSeconds)
        .put("postgresSessions", waits).put("groupCommits", groupCommitTimes)
        .put("heap", new JsonObject().put("afterReloadMb", heapAfterReload >> 20).put("peakDuringDrainMb", heapPeak >> 20)
            .put("maxMb", memory.getHeapMemoryUsage().getMax() >> 20));
    if (liveResult != null) {
      result.put("live", liveResult.toJson().put("ratePerSecond", liveRate).put("seconds", liveSeconds));
      check(name, "no live status read stale after its pay was answered", liveResult.staleReads() == 0);
    }
    return result;
  }

  /**
   * Seconds from the deadline until no event up to {@code lastEventId} waits for its feed position (while closes
   * queue the service's dispatcher leaves them waiting, decision 0052); -1 when some still wait ten minutes after the
   * deadline. Events come later too (the live load's), so the queue itself need not empty.
   */
  private double secondsUntilPositioned(long lastEventId, Instant deadline) throws InterruptedException {
    long stopAt = deadline.toEpochMilli() + 10 * 60_000;
    while (db.number("SELECT count(*) FROM (SELECT FROM outbox_pending WHERE event_id <= ? LIMIT 1) waiting",
        lastEventId) > 0) {
      if (System.currentTimeMillis() > stopAt) {
        return -1;
      }
      Thread.sleep(250);
    }
    return (System.currentTimeMillis() - deadline.toEpochMilli()) / 1000.0;
  }

  private boolean stormOrdersLeftUnpaid() {
    return db.number("SELECT count(*) FROM (SELECT FROM orders WHERE status = 'UNPAID' AND " + STORM_ORDERS + " LIMIT 1) still_unpaid") > 0;
  }

  private static long timeoutCloses(Service service) {
    long closes = 0;
    for (DueOrders.Path path : DueOrders.Path.values()) {
      closes += service.stats().timeoutCloses(path);
    }
    return closes;
  }

  /**
   * The live load during the service's drain, or null when {@code liveRate} is 0: its warm-up from now until the deadline
   * (whole seconds, so it starts a moment later), its measured schedule from the deadline for {@code seconds}.
   */
  private CompletableFuture<OpenLoad.Result> startLiveLoad(int port, Instant deadline, int seconds) throws InterruptedException {
    if (liveRate == 0) {
      return null;
    }
    long untilDeadline = Math.max(0, deadline.toEpochMilli() - System.currentTimeMillis());
    int warmupSeconds = (int) (untilDeadline / 1000);
    Thread.sleep(untilDeadline - warmupSeconds * 1000L);
    OpenLoad.Settings settings = new OpenLoad.Settings("127.0.0.1", port, liveRate, seconds, warmupSeconds, 64, 1, LIVE_SKU_PREFIX, 1);
    return CompletableFuture.supplyAsync(() -> {
      try {
        return OpenLoad.run(settings);
      } catch (Exception e) {
        throw new CompletionException(e);
      }
    });
  }

  /**
   * Batches of {@code batchSize} ids, 4 transactions at once: the service's close path without wheel
   * and event bus. The ids go in the order the wheel hands them out after a reload (shard by shard).
   */
  private Future<Void> driveBatched(DeadlineStore store, Pool pool) {
    long[] all = new long[orders];
    int next = 0;
    for (int shard = 0; shard < 64; shard++) {
      for (long id = shard == 0 ? 64 : shard; id <= orders; id += 64) {
        all[next++] = id;
      }
    }
    AtomicInteger nextBatch = new AtomicInteger();
    List<Future<Void>> lanes = new ArrayList<>();
    for (int lane = 0; lane < IN_FLIGHT; lane++) {
      lanes.add(batchLane(store, all, nextBatch));
    }
    return Future.all(lanes).mapEmpty();
  }

  /**
   * {@link #driveBatched}, while one dispatcher transaction after another positions the closes' events, as the
   * service's dispatcher does with its settings: at once after a full batch, otherwise after its interval.
   */
  private Future<Void> driveBatchedWithDispatch(DeadlineStore store, Pool pool) {
    AppConfig.Events settings = Results.serviceConfig(Map.of()).events();
    EventStore events = EventStore.on(pool);
    AtomicBoolean closing = new AtomicBoolean(true);
    Future<Void> closes = driveBatched(store, pool).andThen(done -> closing.set(false));
    return Future.all(closes, dispatchWhile(closing, events, settings)).mapEmpty();
  }

  private Future<Void> dispatchWhile(AtomicBoolean closing, EventStore events, AppConfig.Events settings) {
    if (!closing.get()) {
      return Future.succeededFuture();
    }
    return events.dispatch(settings.batchSize(), List.of()).compose(taken -> {
      if (taken == settings.batchSize()) {
        return dispatchWhile(closing, events, settings);
      }
      return vertx.timer(settings.dispatchIntervalMillis()).compose(waited -> dispatchWhile(closing, events, settings));
    });
  }

  private Future<Void> batchLane(DeadlineStore store, long[] all, AtomicInteger nextBatch) {
    int from = nextBatch.getAndIncrement() * batchSize;
    if (from >= all.length) {
      return Future.succeededFuture();
    }
    long[] ids = java.util.Arrays.copyOfRange(all, from, Math.min(all.length, from + batchSize));
    return store.closeDue(ids).compose(closed -> batchLane(store, all, nextBatch));
  }

  /** The classic design: scan overdue orders, close each in its own transaction, 8 connections. */
  private Future<Void> driveOnePerOrder(DeadlineStore store, Pool pool) {
    long stopAt = System.currentTimeMillis() + CLASSIC_TIME_CAP_MILLIS;
    return scanAndClose(store, pool, stopAt);
  }

  private Future<Void> scanAndClose(DeadlineStore store, Pool pool, long stopAt) {
    if (System.currentTimeMillis() > stopAt) {
      return Future.succeededFuture();
    }
    return pool.query("SELECT id FROM orders WHERE status = 'UNPAID' AND close_at <= now() ORDER BY close_at LIMIT 1000")
        .execute()
        .compose(rows -> {
          if (rows.size() == 0) {
            return Future.succeededFuture();
          }
          List<Long> ids = new ArrayList<>();
          for (Row row : rows) {
            ids.add(row.getLong(0));
          }
          AtomicInteger next = new AtomicInteger();
          List<Future<Void>> workers = new ArrayList<>();
          for (int w = 0; w < CLASSIC_CONNECTIONS; w++) {
            workers.add(closeOneByOne(store, ids, next));
          }
          return Future.all(workers).compose(done -> scanAndClose(store, pool, stopAt));
        });
  }

  private Future<Void> closeOneByOne(DeadlineStore store, List<Long> ids, AtomicInteger next) {
    int index = next.getAndIncrement();
    if (index >= ids.size()) {
      return Future.succeededFuture();
    }
    return store.closeDue(new long[] {ids.get(index)}).compose(closed -> closeOneByOne(store, ids, next));
  }

  /** Fresh data: SKUs with stock, N unpaid orders of 1-3 items (deadline far away for now), stock reserved. */
  private void seed() {
    db.executeScript(
        "TRUNCATE orders, order_items, inventory, inventory_paid, inventory_released, idempotency_keys, outbox, "
            + "outbox_pending, outbox_feed, webhook_deliveries, order_log",
        "INSERT INTO inventory (sku, available, reserved) SELECT 'SKU-' || s, " + STOCK_PER_SKU + ", 0 FROM generate_series(0, "
            + (SKUS - 1) + ") s",
        "INSERT INTO inventory (sku, available, reserved) SELECT '" + LIVE_SKU_PREFIX + "' || s, " + STOCK_PER_SKU
            + ", 0 FROM generate_series(0, 999) s");
    db.execute("""
        INSERT INTO orders (id, shard, client, user_id, category, status, created_at, close_at)
        SELECT g, g % 64, 'bench', 'u-' || (g % 50000), 'physical', 'UNPAID', now(), ? FROM generate_series(1, ?) g""",
        Timestamp.from(FAR_AWAY), orders);
    // Statistics of the orders just written, before the items' insert trigger looks each one up: with those of the previous
    // round's table (truncated since) the second round's items insert of a million orders ran for minutes (2026-12-02)
    db.executeScript("ANALYZE orders");
    db.execute("""
        INSERT INTO order_items (order_id, sku, qty)
        SELECT g, 'SKU-' || ((g * 7 + k * 131) % 1000), 1 + (g + k) % 3
        FROM generate_series(1, ?) g, generate_series(1, 3) k WHERE k <= 1 + g % 3""", orders);
    db.executeScript("""
        UPDATE inventory i SET available = i.available - d.qty, reserved = i.reserved + d.qty
        FROM (SELECT sku, sum(qty) AS qty FROM order_items GROUP BY sku) d WHERE i.sku = d.sku""");
  }

  /**
   * Time to set every deadline (an UPDATE of every order with its status trigger, then VACUUM ANALYZE; 200,000 orders
   * took more than 5 s on 2026-12-02; a million 42-50 s on 2026-12-06, and twice past the 56 s given then, for the
   * classic run after the others), plus {@code startSeconds} for the service's start and reload.
   */
  private int leadSeconds(int startSeconds) {
    return 6 + orders / 12_500 + startSeconds;
  }

  /** Puts every order's deadline {@code leadSeconds} from now, the same instant for all. */
  private Instant armDeadline(int leadSeconds) {
    Instant deadline = Instant.now().plusSeconds(leadSeconds);
    db.execute("UPDATE orders SET close_at = ?", Timestamp.from(deadline));
    db.executeScript("VACUUM ANALYZE orders", "VACUUM ANALYZE order_items", "VACUUM ANALYZE inventory");
    if (Instant.now().isAfter(deadline.minusSeconds(1))) {
      throw new IllegalStateException("setting the deadlines took longer than their lead of " + leadSeconds + " s");
    }
    System.out.printf("close-storm setup: %d deadlines set in %d ms%n", orders,
        Duration.between(deadline.minusSeconds(leadSeconds), Instant.now()).toMillis());
    return deadline;
  }

  /** Drain rate and lateness from the database clock, after checking the run closed everything correctly. */
  private JsonObject report(String name, Instant deadline) {
    double closed = db.number("SELECT count(*) FROM orders WHERE status = 'CLOSED' AND " + STORM_ORDERS);
    double drainSeconds = db.number("SELECT extract(epoch FROM max(closed_at) - min(close_at)) FROM orders WHERE status = 'CLOSED' AND "
        + STORM_ORDERS);
    JsonObject result = new JsonObject()
        .put("closed", (long) closed)
        .put("drainSeconds", Results.round(drainSeconds))
        .put("closesPerSecond", Results.round(closed / drainSeconds))
        .put("latenessP50Ms", latenessPercentile(0.5))
        .put("latenessP99Ms", latenessPercentile(0.99))
        .put("latenessP999Ms", latenessPercentile(0.999))
        .put("latenessMaxMs", latenessPercentile(1.0))
        .put("latenessHistogram", db.latenessHistogram("status = 'CLOSED' AND " + STORM_ORDERS))
        // every deadline is the same instant: the closes per second of the drain, by their deadline's second, would all be in
        // second 0; by when they closed instead
        .put("closedPerSecond", closedPerSecond(deadline));
    verify(name, (long) closed);
    System.out.println(name + ": " + result.encode());
    return result;
  }

  /** Closes per second of the drain from the common deadline, by closed_at, in {@link PerSecond}'s JSON shape (counts only). */
  private JsonObject closedPerSecond(Instant deadline) {
    long[] counts = new long[600];
    int seconds = 0;
    try (Connection c = db.setup.openJdbc(); PreparedStatement s = c.prepareStatement("""
        SELECT floor(extract(epoch FROM closed_at - ?::timestamptz))::int, count(*) FROM orders WHERE status = 'CLOSED' AND\s"""
        + STORM_ORDERS + " GROUP BY 1")) {
      s.setTimestamp(1, Timestamp.from(deadline));
      try (ResultSet r = s.executeQuery()) {
        while (r.next()) {
          int second = Math.max(0, Math.min(counts.length - 1, r.getInt(1)));
          counts[second] += r.getLong(2);
          seconds = Math.max(seconds, second + 1);
        }
      }
    } catch (SQLException e) {
      throw new IllegalStateException("closes per second", e);
    }
    JsonArray series = new JsonArray();
    for (int i = 0; i < seconds; i++) {
      series.add(counts[i]);
    }
    return new JsonObject().put("axis", "second after the common deadline (closes by when they closed)")
        .put("fromEpochMillis", deadline.toEpochMilli()).put("seconds", seconds)
        .put("counts", new JsonObject().put("closes", series));
  }

  private double latenessPercentile(double fraction) {
    return Results.round(db.number("""
        SELECT percentile_cont(?) WITHIN GROUP (ORDER BY extract(epoch FROM closed_at - close_at) * 1000)
        FROM orders WHERE status = 'CLOSED' AND\s""" + STORM_ORDERS, fraction));
  }

  private void verify(String name, long closed) {
    // the storm's ids are 1..orders
    check(name, "closed once in the log", db.number("SELECT count(*) FROM order_log WHERE event = 'CLOSED' AND order_id <= ?", orders) == closed);
    check(name, "one ORDER_CLOSED event each",
        db.number("SELECT count(DISTINCT order_id) FROM outbox WHERE type = 'ORDER_CLOSED' AND order_id <= ?", orders) == closed
        && db.number("SELECT count(*) FROM outbox WHERE type = 'ORDER_CLOSED' AND order_id <= ?", orders) == closed);
    check(name, "none early", db.number("SELECT count(*) FROM orders WHERE closed_at < close_at") == 0);
    check(name, "stock invariant", db.stockInvariantViolations() == 0);
    if (!name.equals("classic")) {
      check(name, "every order closed", closed == orders);
      check(name, "all stock back",
          db.number("SELECT count(*) FROM stock WHERE sku LIKE 'SKU-%' AND (reserved <> 0 OR available <> ?)",
              STOCK_PER_SKU) == 0);
    }
  }

  private static void check(String run, String what, boolean ok) {
    if (!ok) {
      throw new IllegalStateException(run + ": check failed: " + what);
    }
  }

  private static void sleepUntil(Instant instant) throws InterruptedException {
    long millis = instant.toEpochMilli() - System.currentTimeMillis();
    if (millis > 0) {
      Thread.sleep(millis);
    }
  }


}
