package ordertimeout.bench;

import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import ordertimeout.Service;
import ordertimeout.bus.DueOrders;
import ordertimeout.config.AppConfig;
import ordertimeout.config.ConfigSource;

import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Steady state: orders created at a constant rate (Gatling, open model) with timeouts of 5-15 s, 60% paid
 * before their deadline; then the lateness of every timeout close (closed_at - close_at, both from the
 * database clock), p50/p99/p99.9/max, and the number closed early, which must be 0.
 */
public final class SteadyStateBenchmark {
  private SteadyStateBenchmark() {}

  /** Arguments: creates per second (2000), seconds (60). */
  public static void main(String[] args) throws Exception {
    int rate = args.length > 0 ? Integer.parseInt(args[0]) : 2000;
    int seconds = args.length > 1 ? Integer.parseInt(args[1]) : 60;
    try (BenchDatabase db = BenchDatabase.fresh("bench-db-steady")) {
      run(db, rate, seconds);
    }
    System.exit(0);
  }

  private static void run(BenchDatabase db, int rate, int seconds) throws Exception {
    db.executeScript("INSERT INTO inventory (sku, available) SELECT 'SKU-' || s, 1000000000 FROM generate_series(0, 999) s");
    int port = Results.freePort();
    Map<String, String> environment = Map.of("OT_HTTP_PORT", Integer.toString(port), "OT_ORDERS_MAX_UNPAID_PER_USER", "1000000");
    AppConfig config = AppConfig.from(ConfigSource.load(Path.of("conf/application.yaml"), environment::get));
    Vertx vertx = Vertx.vertx();
    Service service = Service.start(vertx, config, db.setup.connectOptions()).toCompletionStage().toCompletableFuture()
        .get(1, TimeUnit.MINUTES);
    GatlingRun.Result gatling;
    try {
      gatling = GatlingRun.run("ordertimeout.bench.gatling.SteadyStateSimulation", Map.of(
          "baseUrl", "http://127.0.0.1:" + port, "rate", Integer.toString(rate), "duration", Integer.toString(seconds)));
      long waitUntil = System.currentTimeMillis() + 60_000;
      while (db.number("SELECT count(*) FROM orders WHERE status = 'UNPAID'") > 0 && System.currentTimeMillis() < waitUntil) {
        Thread.sleep(200);
      }
    } finally {
      service.stop().toCompletionStage().toCompletableFuture().get(1, TimeUnit.MINUTES);
    }
    double created = db.number("SELECT count(*) FROM orders");
    double paid = db.number("SELECT count(*) FROM orders WHERE status = 'PAID'");
    double closed = db.number("SELECT count(*) FROM orders WHERE close_reason = 'TIMEOUT'");
    double early = db.number("SELECT count(*) FROM orders WHERE closed_at < close_at");
    double unpaid = db.number("SELECT count(*) FROM orders WHERE status = 'UNPAID'");
    long wrongStock = db.stockInvariantViolations();
    JsonObject result = Results.header("steady-state")
        .put("ratePerSecond", rate)
        .put("seconds", seconds)
        .put("gatling", gatling.toJson())
        .put("created", (long) created)
        .put("paid", (long) paid)
        .put("closedOnTimeout", (long) closed)
        .put("closedBySweep", service.stats().timeoutCloses(DueOrders.Path.SWEEP))
        .put("leftUnpaid", (long) unpaid)
        .put("closedEarly", (long) early)
        .put("stockInvariantBroken", wrongStock)
        .put("latenessP50Ms", lateness(db, 0.5))
        .put("latenessP99Ms", lateness(db, 0.99))
        .put("latenessP999Ms", lateness(db, 0.999))
        .put("latenessMaxMs", lateness(db, 1.0));
    Results.write("steady-state", result);
    System.out.printf("steady-state: %d creates/s for %d s (Gatling p99 %.0f ms, %d failed); %d created, %d paid, %d closed on timeout; "
            + "lateness p50 %.1f ms, p99 %.1f ms, p99.9 %.1f ms, max %.1f ms; closed early %d; left unpaid %d; stock %s%n",
        rate, seconds, gatling.p99Ms(), gatling.failed(), (long) created, (long) paid, (long) closed,
        result.getDouble("latenessP50Ms"), result.getDouble("latenessP99Ms"), result.getDouble("latenessP999Ms"),
        result.getDouble("latenessMaxMs"), (long) early, (long) unpaid, wrongStock == 0 ? "consistent" : "BROKEN");
  }

  private static double lateness(BenchDatabase db, double fraction) {
    return Math.round(db.number("""
        SELECT coalesce(percentile_cont(?) WITHIN GROUP (ORDER BY extract(epoch FROM closed_at - close_at) * 1000), 0)
        FROM orders WHERE close_reason = 'TIMEOUT'""", fraction) * 10) / 10.0;
  }
}
