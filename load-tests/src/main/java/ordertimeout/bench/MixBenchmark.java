package ordertimeout.bench;

import io.vertx.core.json.JsonObject;
import ordertimeout.Service;
import ordertimeout.config.AppConfig;
import ordertimeout.metrics.Meters;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A shop's mix under wrk against creates alone, side by side in one run: how much of the creates-only rate the
 * service keeps when each create also brings 0.6 pays, one status read and 0.4 timeout closes (issue 14's first goal
 * asks for at least half). In one JVM with the service, on a fresh database of 1,000 SKUs: wrk's creates alone
 * ({@code create-order.lua}, with the default deadline, so nothing closes) for a warm-up and then the measured window,
 * then the mix ({@code order-mix.lua}) in one wrk run of its warm-up and window, so that the pays and reads its warm-up
 * planned come due in the window; 64 connections each. For each window: creates a second, wrk's p99 over all its
 * requests, the CPU per create of this JVM (the service), PostgreSQL and the rest of the machine (wrk, and any
 * neighbour), the creates' and pays' waits for their group commit and its transactions ({@link GroupCommitTimes}), and
 * where PostgreSQL's sessions were ({@link WaitSampler}; {@code -Dmix.topStatements}, 8, of its statements); with
 * {@code -Dmix.statementCosts=N}, the mix window's N statements that took PostgreSQL longest (pg_stat_statements, the
 * statements in functions and triggers apart too). Then,
 * once the mix's deadlines have passed: no order left unpaid past its deadline, none closed early, none ended twice,
 * the stock adds up, no answer of the creates' warm-up other than 2xx and none of the mix other than 2xx or 409 (a pay
 * after its order's close, counted); the lateness of the mix's closes. wrk is a closed loop: its rates are what the
 * machine gives with wrk on it, its latencies hide stalls (the open-model {@link SteadyStateBenchmark} measures
 * those).
 */
public final class MixBenchmark {
  private static final int CONNECTIONS = 64;
  private static final int TOP_STATEMENTS = Integer.getInteger("mix.topStatements", 8);
  private static final int STATEMENT_COSTS = Integer.getInteger("mix.statementCosts", 0);
  private static final Pattern MIX_COUNTS =
      Pattern.compile("mix: creates (\\d+) pays (\\d+) reads (\\d+) refused (\\d+) unexpected (\\d+)");

  private MixBenchmark() {}

  /** Arguments: seconds of each warm-up and each measured window (20). Exits 1 when a check fails. */
  public static void main(String[] args) throws Exception {
    int seconds = args.length > 0 ? Integer.parseInt(args[0]) : 20;
    boolean holds;
    try (BenchDatabase db = BenchDatabase.fresh("bench-db-mix")) {
      holds = run(db, seconds);
    }
    System.exit(holds ? 0 : 1);
  }

  private static boolean run(BenchDatabase db, int seconds) throws Exception {
    db.executeScript("INSERT INTO inventory (sku, available) SELECT 'SKU-' || s, 1000000000 "
        + "FROM generate_series(0, 999) s");
    int port = Results.freePort();
    AppConfig config = Results.serviceConfig(Map.of("OT_HTTP_PORT", Integer.toString(port),
        "OT_ORDERS_MAX_UNPAID_PER_USER", "1000000", "OT_CLIENTS_OVERRIDES", Results.UNCAPPED_DEV_USER));
    Service service = Service.start(config, db.setup.connectOptions()).toCompletionStage().toCompletableFuture()
        .get(1, TimeUnit.MINUTES);
    String url = "http://127.0.0.1:" + port;
    Map<String, String> skus = Map.of("WRK_SKUS", "1000");
    JsonObject createsAlone;
    JsonObject mix;
    double mixFrom;
    try {
      Window window = new Window(db, service);
      Wrk.Run warmUp = Wrk.run(url, "create-order.lua", CONNECTIONS, seconds, skus);
      // statistics of tables with orders in them, as autovacuum leaves them a minute or so later (IntakeBenchmark)
      db.executeScript("ANALYZE");
      window.begin();
      Wrk.Run alone = Wrk.run(url, "create-order.lua", CONNECTIONS, seconds, skus);
      CpuWindow.Split aloneCpu = window.stopCpu();
      createsAlone = measured(alone, aloneCpu, Math.round(alone.perSecond() * seconds), seconds)
          .put("warmUpErrors", warmUp.errors()).mergeIn(window.end());

      // One wrk for the mix's warm-up and window: the pays and reads its warm-up planned come due in the window.
      mixFrom = db.number("SELECT extract(epoch FROM clock_timestamp())");
      long countFrom = System.currentTimeMillis() / 1000 + 1 + seconds;
      CompletableFuture<Wrk.Run> mixing = CompletableFuture.supplyAsync(() -> wrk(url, "order-mix.lua", seconds * 2 + 1,
          Map.of("WRK_SKUS", "1000", "WRK_COUNT_FROM", Long.toString(countFrom))));
      window = new Window(db, service);
      if (STATEMENT_COSTS > 0) {
        db.prepareStatementCounts();
      }
      Thread.sleep(Math.max(0, countFrom * 1000 - System.currentTimeMillis()));
      window.begin();
      if (STATEMENT_COSTS > 0) {
        db.resetStatementCounts();
      }
      Wrk.Run mixed = mixing.get(seconds * 3L, TimeUnit.SECONDS);
      CpuWindow.Split mixCpu = window.stopCpu();
      JsonObject statements = STATEMENT_COSTS > 0 ? db.statementCosts(STATEMENT_COSTS) : null;
      Matcher counts = MIX_COUNTS.matcher(mixed.output());
      if (!counts.find()) {
        throw new IllegalStateException("order-mix.lua printed no counts:\n" + mixed.output());
      }
      long creates = Long.parseLong(counts.group(1));
      mix = measured(mixed, mixCpu, creates, mixCpu.seconds())
          .put("paysPerSecond", Results.round(Long.parseLong(counts.group(2)) / mixCpu.seconds()))
          .put("readsPerSecond", Results.round(Long.parseLong(counts.group(3)) / mixCpu.seconds()))
          .put("refused", Long.parseLong(counts.group(4)))
          .put("unexpected", Long.parseLong(counts.group(5)))
          .mergeIn(window.end());
      if (statements != null) {
        mix.put("statements", statements);
      }
      // wrk's own rate: every kind of request, over the mix's warm-up too; not the window's creates
      mix.put("allRequestsPerSecondWholeRun", mix.remove("perSecond"));
      // The mix's last deadlines are 15 s after its last creates; every order past its deadline must then be closed
      // or paid within a tick or a pass of the sweep. (Creates alone left orders due in 30 minutes, some created
      // after mixFrom: answered after wrk had stopped.)
      Thread.sleep(16_000);
      long waitUntil = System.currentTimeMillis() + 60_000;
      while (unpaidPastTheirDeadline(db) > 0 && System.currentTimeMillis() < waitUntil) {
        Thread.sleep(500);
      }
    } finally {
      service.stop().toCompletionStage().toCompletableFuture().get(1, TimeUnit.MINUTES);
    }
    long leftUnpaid = unpaidPastTheirDeadline(db);
    long early = (long) db.number("SELECT count(*) FROM orders WHERE closed_at < close_at");
    long endedTwice = db.endedMoreThanOnce();
    long wrongStock = db.stockInvariantViolations();
    String closesOfTheMix = "close_reason = 'TIMEOUT' AND created_at >= to_timestamp(?)";
    double latenessP99 = db.number("SELECT coalesce(percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM "
        + "closed_at - close_at) * 1000), 0) FROM orders WHERE " + closesOfTheMix, mixFrom);
    double latenessMax = db.number("SELECT coalesce(max(extract(epoch FROM closed_at - close_at) * 1000), 0) "
        + "FROM orders WHERE " + closesOfTheMix, mixFrom);
    double share = mix.getDouble("createsPerSecond") / createsAlone.getDouble("createsPerSecond");
    JsonObject result = Results.header("mix-wrk").put("seconds", seconds).put("connections", CONNECTIONS)
        .put("createsAlone", createsAlone).put("mix", mix).put("mixCreatesShareOfCreatesAlone", Results.round(share))
        .put("mixLatenessP99Ms", Results.round(latenessP99)).put("mixLatenessMaxMs", Results.round(latenessMax))
        .put("mixClosedOnTimeout", (long) db.number("SELECT count(*) FROM orders WHERE " + closesOfTheMix, mixFrom))
        .put("leftUnpaidPastDeadline", leftUnpaid).put("closedEarly", early).put("endedMoreThanOnce", endedTwice)
        .put("stockInvariantBroken", wrongStock);
    Results.write("mix-wrk", result);
    System.out.printf("mix-wrk: wrk at %d connections, %d s each after %d s of warm-up: creates alone %.0f/s "
            + "(p99 %.1f ms; CPU per create: service %.0f µs, its JIT compilers %.2f cores, PostgreSQL %.0f µs, wrk "
            + "and the rest %.0f µs); the mix %.0f creates/s + %.0f pays/s + %.0f reads/s (p99 of all, its warm-up's "
            + "too, %.1f ms; per create %.0f µs, %.2f cores, %.0f µs, %.0f µs; %d answered 409, %d unexpected "
            + "answers; reads from the status cache %.0f%%): its creates at %.0f%% of creates alone; its closes' "
            + "lateness p99 %.1f ms, max %.1f ms; left unpaid past their deadline %d, closed early %d, ended twice %d, "
            + "stock %s%n",
        CONNECTIONS, seconds, seconds, createsAlone.getDouble("createsPerSecond"), createsAlone.getDouble("p99Ms"),
        createsAlone.getDouble("serviceMicrosPerCreate"), compilerCores(createsAlone),
        createsAlone.getDouble("postgresMicrosPerCreate"), createsAlone.getDouble("otherMicrosPerCreate"),
        mix.getDouble("createsPerSecond"), mix.getDouble("paysPerSecond"), mix.getDouble("readsPerSecond"),
        mix.getDouble("p99Ms"), mix.getDouble("serviceMicrosPerCreate"), compilerCores(mix),
        mix.getDouble("postgresMicrosPerCreate"), mix.getDouble("otherMicrosPerCreate"), mix.getLong("refused"),
        mix.getLong("unexpected"), 100.0 * mix.getLong("statusCacheHits")
            / Math.max(1, mix.getLong("statusCacheHits") + mix.getLong("statusCacheMisses")), 100 * share, latenessP99,
        latenessMax, leftUnpaid, early, endedTwice, wrongStock == 0 ? "consistent" : "BROKEN");
    for (String window : new String[] {"createsAlone", "mix"}) {
      GroupCommitTimes.print("mix-wrk, " + window, result.getJsonObject(window).getJsonObject("groupCommits"));
      WaitSampler.print("mix-wrk, " + window, result.getJsonObject(window).getJsonObject("postgresSessions"));
    }
    if (mix.containsKey("statements")) {
      BenchDatabase.printStatements("mix-wrk, mix", mix.getJsonObject("statements"), "create of the mix",
          Math.round(mix.getDouble("createsPerSecond") * mix.getJsonObject("cpu").getDouble("seconds")));
    }
    boolean holds = leftUnpaid == 0 && early == 0 && endedTwice == 0 && wrongStock == 0
        && mix.getLong("unexpected") == 0 && mix.getLong("socketErrors") == 0 && createsAlone.getLong("errors") == 0
        && createsAlone.getLong("warmUpErrors") == 0;
    if (!holds) {
      System.out.println("mix-wrk: FAILED: see load-tests/results/mix-wrk.json");
    }
    return holds;
  }

  /**
   * A measured window of {@code seconds}: creates a second, wrk's p99 and errors (answers other than 2xx, a late pay's
   * 409 among them, and socket errors), and the CPU per create of each part.
   */
  private static JsonObject measured(Wrk.Run run, CpuWindow.Split cpu, long creates, double seconds) {
    double micros = cpu.seconds() * 1e6 / Math.max(1, creates);
    return run.toJson().put("socketErrors", run.socketErrors())
        .put("createsPerSecond", Results.round(creates / seconds))
        .put("serviceMicrosPerCreate", Math.round(cpu.jvmCores() * micros))
        .put("postgresMicrosPerCreate", Math.round(cpu.postgresCores() * micros))
        .put("otherMicrosPerCreate", Math.round(cpu.otherCores() * micros))
        .put("cpu", cpu.toJson());
  }

  /**
   * A measured window's marks: the CPU split, the group commits' timers, PostgreSQL's sessions and the status cache's
   * hits and misses. The sampler's connection is opened when the window is made, before its warm-up (see
   * {@link WaitSampler#restart}).
   */
  private static final class Window {
    private final BenchDatabase db;
    private final Service service;
    private final WaitSampler sessions;
    private CpuWindow cpu;
    private GroupCommitTimes groups;
    private double cacheHits;
    private double cacheMisses;

    Window(BenchDatabase db, Service service) {
      this.db = db;
      this.service = service;
      this.sessions = WaitSampler.start(db);
    }

    void begin() {
      cpu = CpuWindow.start(db.postgresDataDir());
      groups = GroupCommitTimes.start(service.stats());
      sessions.restart();
      cacheHits = statusCacheReads("hit");
      cacheMisses = statusCacheReads("miss");
    }

    /** The CPU split, stopped first, as the load ends. */
    CpuWindow.Split stopCpu() {
      return cpu.stop(0);
    }

    /** After {@link #stopCpu}: {@code groupCommits}, {@code postgresSessions} and the status cache's reads. */
    JsonObject end() throws InterruptedException {
      return new JsonObject().put("groupCommits", groups.stop()).put("postgresSessions", sessions.stop(TOP_STATEMENTS))
          .put("statusCacheHits", Math.round(statusCacheReads("hit") - cacheHits))
          .put("statusCacheMisses", Math.round(statusCacheReads("miss") - cacheMisses));
    }

    /** The status cache's reads so far, of {@code result} hit or miss. */
    private double statusCacheReads(String result) {
      return service.registry().get(Meters.STATUS_CACHE_READS).tag("result", result).functionCounter().count();
    }
  }

  private static Wrk.Run wrk(String url, String script, int seconds, Map<String, String> environment) {
    try {
      return Wrk.run(url, script, CONNECTIONS, seconds, environment);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private static double compilerCores(JsonObject window) {
    return window.getJsonObject("cpu").getDouble("jitCompilerCores");
  }

  private static long unpaidPastTheirDeadline(BenchDatabase db) {
    return (long) db.number("SELECT count(*) FROM orders WHERE status = 'UNPAID' AND close_at < clock_timestamp()");
  }
}
