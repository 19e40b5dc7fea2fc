package ordertimeout.bench;

import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.core.json.JsonObject;
import ordertimeout.Service;
import ordertimeout.config.AppConfig;
import org.HdrHistogram.Histogram;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Webhook delivery lag: events written into the outbox at a steady rate, as the service's own transactions write
 * them, and delivered by the service (the dispatcher gives them their feed position, the webhook sender POSTs them,
 * signed) to one receiver on loopback. An event's lag is the receiver's clock at its arrival minus the event's
 * {@code created_at} (the same machine's clock). The events are written by SQL rather than by orders through the
 * API, so that the figure is the delivery's alone, not the intake's: each of its own order, every
 * {@value #WRITE_EVERY_MILLIS} ms a transaction of rate/{@value #WRITES_PER_SECOND} events, for a warm-up of
 * {@value #WARMUP_SECONDS} s and then the measured seconds; lag p50, p99 and max of the measured ones, and how many
 * of them arrived, and per second of the measured writes the events received and their lag p50/p99 (by arrival).
 *
 * <p>With a backlog, the measured events are that many written in one statement (a storm of closes) after the warm-up,
 * and the run waits up to the measured seconds for them: it prints how long the dispatcher took to position them all,
 * how long they took to arrive and so the rate they were delivered at, and what the sender's reads of the due
 * deliveries cost (calls, time and buffers each, from pg_stat_statements).
 *
 * <p>Arguments: events per second (1000), measured seconds (30), backlog (0: none).
 */
public final class WebhookBenchmark {
  private static final int WARMUP_SECONDS = 5;
  private static final int WRITES_PER_SECOND = 50;
  private static final int WRITE_EVERY_MILLIS = 1000 / WRITES_PER_SECOND;
  private static final long WARMUP_ORDER_IDS = 1_000_000_000L;
  private static final int TOP_STATEMENTS = 8;

  private WebhookBenchmark() {}

  public static void main(String[] args) throws Exception {
    int rate = args.length > 0 ? Integer.parseInt(args[0]) : 1000;
    int seconds = args.length > 1 ? Integer.parseInt(args[1]) : 30;
    int backlog = args.length > 2 ? Integer.parseInt(args[2]) : 0;
    try (BenchDatabase db = BenchDatabase.fresh("bench-db-webhook")) {
      run(db, rate, seconds, backlog);
    }
    System.exit(0);
  }

  private static void run(BenchDatabase db, int rate, int seconds, int backlog) throws Exception {
    Histogram lagMicros = new Histogram(3_600_000_000L, 3);
    AtomicLong received = new AtomicLong();
    AtomicLong lastArrivalNanos = new AtomicLong();
    // per second of the measured writes, guarded by lagMicros: events received, and their lag by the second they arrived
    AtomicReference<PerSecond> perSecond = new AtomicReference<>();
    Vertx receiverVertx = Vertx.vertx();
    HttpServer receiver = receiverVertx.createHttpServer().requestHandler(request -> request.body().onSuccess(body -> {
      long arrivedMicros = nowMicros();
      JsonObject event = body.toJsonObject();
      long orderId = Long.parseLong(event.getJsonObject("data").getString("orderId"));
      if (orderId < WARMUP_ORDER_IDS) {
        Instant created = Instant.parse(event.getString("timestamp"));
        long lag = Math.max(0, arrivedMicros - (created.getEpochSecond() * 1_000_000 + created.getNano() / 1000));
        synchronized (lagMicros) {
          lagMicros.recordValue(lag);
          PerSecond series = perSecond.get();
          if (series != null) {
            long now = System.nanoTime();
            series.count("received", now);
            series.latency("lag", now, lag);
          }
        }
        received.incrementAndGet();
        lastArrivalNanos.set(System.nanoTime());
      }
      request.response().setStatusCode(204).end();
    })).listen(0, "127.0.0.1").toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);

    int port = Results.freePort();
    AppConfig config = Results.serviceConfig(Map.of("OT_HTTP_PORT", Integer.toString(port),
        "OT_WEBHOOKS", "[{url: 'http://127.0.0.1:" + receiver.actualPort() + "/hook', secret: webhook-benchmark-secret-0123}]"));
    Vertx vertx = Vertx.vertx(Service.vertxOptions());
    Service service = Service.start(vertx, config, db.setup.connectOptions()).toCompletionStage().toCompletableFuture()
        .get(1, TimeUnit.MINUTES);
    long planned = backlog > 0 ? backlog : (long) rate * seconds;
    long lateWrites = 0;
    long startedNanos;
    long positionedNanos = 0;
    JsonObject statements = null;
    try (Connection connection = db.setup.openJdbc()) {
      writeEvents(connection, rate, WARMUP_SECONDS, WARMUP_ORDER_IDS);
      db.countStatements();
      perSecond.set(new PerSecond(System.nanoTime(), seconds + 120,
          "second of the measured writes (events by the second they arrived, and their lag)").counts("received"));
      startedNanos = System.nanoTime();
      if (backlog > 0) {
        writeBacklog(connection, backlog);
      } else {
        lateWrites = writeEvents(connection, rate, seconds, 1);
        statements = db.statementCosts(TOP_STATEMENTS);
      }
      long waitUntil = System.currentTimeMillis() + (backlog > 0 ? Math.max(60, seconds) * 1000L : 60_000);
      while (received.get() < planned && System.currentTimeMillis() < waitUntil) {
        if (backlog > 0 && positionedNanos == 0 && db.number("SELECT count(*) FROM outbox_pending") == 0) {
          positionedNanos = System.nanoTime() - startedNanos;
        }
        Thread.sleep(100);
      }
      if (backlog > 0) {
        statements = db.statementCosts(TOP_STATEMENTS);
      }
    } finally {
      service.stop().toCompletionStage().toCompletableFuture().get(1, TimeUnit.MINUTES);
      vertx.close();
      receiverVertx.close();
    }
    double delivered = db.number("SELECT count(*) FROM webhook_deliveries WHERE status = 'DELIVERED'");
    double pendingOrFailed = db.number("SELECT count(*) FROM webhook_deliveries WHERE status <> 'DELIVERED'");
    JsonObject result = Results.header("webhook")
        .put("eventsPerSecond", rate)
        .put("seconds", seconds)
        .put("planned", planned)
        .put("received", received.get())
        .put("lateWrites", lateWrites)
        .put("deliveredInDatabase", (long) delivered)
        .put("notDelivered", (long) pendingOrFailed)
        .put("lagP50Ms", OpenLoad.Result.ms(lagMicros.getValueAtPercentile(50)))
        .put("lagP99Ms", OpenLoad.Result.ms(lagMicros.getValueAtPercentile(99)))
        .put("lagMaxMs", OpenLoad.Result.ms(lagMicros.getMaxValue()))
        .put("postgresStatements", statements);
    if (backlog > 0) {
      double drainSeconds = (lastArrivalNanos.get() - startedNanos) / 1e9;
      result.put("backlog", backlog)
          .put("positionedSeconds", Math.round(positionedNanos / 1e6) / 1000.0)
          .put("drainSeconds", Math.round(drainSeconds * 1000) / 1000.0)
          .put("deliveredPerSecond", Math.round(received.get() / drainSeconds))
          .put("dueReads", dueReads(db));
    }
    synchronized (lagMicros) {
      result.put("perSecond", perSecond.get().toJson());
    }
    Results.write("webhook", result);
    if (backlog > 0) {
      JsonObject reads = result.getJsonObject("dueReads");
      System.out.printf("webhook: a backlog of %d events written at once after a %d s warm-up: %d received; all "
              + "positioned after %.1f s, arrived after %.1f s: %d delivered/s; lag p50 %.1f ms, p99 %.1f ms, "
              + "max %.1f ms; %d deliveries not delivered at the end%n", backlog, WARMUP_SECONDS, received.get(),
          result.getDouble("positionedSeconds"), result.getDouble("drainSeconds"), result.getLong("deliveredPerSecond"),
          result.getDouble("lagP50Ms"), result.getDouble("lagP99Ms"), result.getDouble("lagMaxMs"),
          (long) pendingOrFailed);
      System.out.printf("webhook: the sender's reads of the due deliveries: %d calls, %.2f ms and %.0f buffers each, "
              + "%d ms in all%n", reads.getLong("calls"), reads.getDouble("meanMs"), reads.getDouble("buffersPerCall"),
          reads.getLong("totalMs"));
    } else {
      System.out.printf("webhook: %d events/s for %d s after a %d s warm-up: %d of %d received; lag p50 %.1f ms, "
              + "p99 %.1f ms, max %.1f ms; %d writes late by more than a period; %d deliveries not delivered at the "
              + "end%n", rate, seconds, WARMUP_SECONDS, received.get(), planned, result.getDouble("lagP50Ms"),
          result.getDouble("lagP99Ms"), result.getDouble("lagMaxMs"), lateWrites, (long) pendingOrFailed);
    }
    System.out.println(backlog > 0 ? "webhook: the statements that took most until the backlog arrived:"
        : "webhook: the statements that took most while the measured events were written:");
    for (Object entry : statements.getJsonArray("top")) {
      JsonObject statement = (JsonObject) entry;
      System.out.printf("  %7d ms %7d calls %7.2f ms each %s%n", statement.getLong("totalMs"), statement.getLong("calls"),
          statement.getDouble("meanMs"), statement.getString("query"));
    }
  }

  /**
   * Writes {@code rate} events a second for {@code seconds}, order ids from {@code firstOrderId}, on the clock; answers how
   * many writes started more than a period after their due moment.
   */
  private static long writeEvents(Connection connection, int rate, int seconds, long firstOrderId)
      throws SQLException, InterruptedException {
    int perWrite = Math.max(1, rate / WRITES_PER_SECOND);
    long writes = (long) seconds * WRITES_PER_SECOND;
    long late = 0;
    long start = System.nanoTime();
    try (PreparedStatement insert = connection.prepareStatement("""
        INSERT INTO outbox (order_id, client, type, payload, created_at)
        SELECT n, 'dev-user', 'ORDER_CREATED', jsonb_build_object('orderId', n::text, 'client', 'dev-user', 'status', 'UNPAID'),
               clock_timestamp()
        FROM generate_series(?::bigint, ?::bigint) AS n""")) {
      for (long w = 0; w < writes; w++) {
        long due = start + TimeUnit.MILLISECONDS.toNanos(w * WRITE_EVERY_MILLIS);
        long wait = due - System.nanoTime();
        if (wait > 0) {
          TimeUnit.NANOSECONDS.sleep(wait);
        } else if (-wait > TimeUnit.MILLISECONDS.toNanos(WRITE_EVERY_MILLIS)) {
          late++;
        }
        long first = firstOrderId + w * perWrite;
        insert.setLong(1, first);
        insert.setLong(2, first + perWrite - 1);
        insert.executeUpdate();
      }
    }
    return late;
  }

  /** {@code count} events of orders 1 to {@code count} in one statement, as a storm's closes. */
  private static void writeBacklog(Connection connection, int count) throws SQLException {
    try (PreparedStatement insert = connection.prepareStatement("""
        INSERT INTO outbox (order_id, client, type, payload, created_at)
        SELECT n, 'dev-user', 'ORDER_CLOSED',
               jsonb_build_object('orderId', n::text, 'client', 'dev-user', 'status', 'CLOSED'), clock_timestamp()
        FROM generate_series(1, ?::bigint) AS n""")) {
      insert.setLong(1, count);
      insert.executeUpdate();
    }
  }

  /**
   * The sender's reads of the due deliveries since the statements were counted (the statement of any version: it
   * reads {@code unnest($4::text[], $3::int[] ...)}): calls, their time, and the buffers they touched per call.
   */
  private static JsonObject dueReads(BenchDatabase db) throws SQLException {
    try (Connection connection = db.setup.openJdbc(); PreparedStatement select = connection.prepareStatement("""
        SELECT coalesce(sum(calls), 0) AS calls, coalesce(sum(total_exec_time), 0) AS ms,
               coalesce(sum(shared_blks_hit + shared_blks_read), 0) AS buffers
        FROM pg_stat_statements WHERE query LIKE '%unnest($4::text[], $3::int[]%'""");
         ResultSet row = select.executeQuery()) {
      row.next();
      long calls = row.getLong("calls");
      return new JsonObject()
          .put("calls", calls)
          .put("totalMs", Math.round(row.getDouble("ms")))
          .put("meanMs", calls == 0 ? 0 : Math.round(row.getDouble("ms") / calls * 100) / 100.0)
          .put("buffersPerCall", calls == 0 ? 0 : Math.round(row.getDouble("buffers") / calls * 10) / 10.0);
    }
  }

  private static long nowMicros() {
    Instant now = Instant.now();
    return now.getEpochSecond() * 1_000_000 + now.getNano() / 1000;
  }
}
