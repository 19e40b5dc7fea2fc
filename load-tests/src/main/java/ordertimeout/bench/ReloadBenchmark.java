package ordertimeout.bench;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import ordertimeout.bus.LocalCodec;
import ordertimeout.config.AppConfig;
import ordertimeout.metrics.NodeStats;
import ordertimeout.order.OrderIds;
import ordertimeout.timer.OwnedShards;
import ordertimeout.timer.TimerVerticle;
import org.postgresql.PGConnection;
import org.postgresql.copy.CopyManager;

import java.io.IOException;
import java.io.OutputStream;
import java.io.Reader;
import java.lang.reflect.Field;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Reload: how long the timer takes on start to load every pending order of a fresh embedded PostgreSQL into its wheel
 * (the real {@link TimerVerticle}, deployed alone on a fresh Vert.x; its start completes after the reload), against
 * the floor of reading the same columns of the same rows out of PostgreSQL: one {@code COPY ... TO STDOUT} through
 * the JDBC driver into a discarding stream. Median of 3 each, interleaved.
 *
 * <p>Arguments: unpaid orders (1000000), runs (3). The service's configuration is conf/application.yaml with the
 * usual OT_ environment overrides (e.g. OT_TIMER_RELOAD_PAGE_SIZE).
 */
public final class ReloadBenchmark {
  private static final int SHARDS = 64;
  private static final int NODE_ID = 1;
  private static final long ORDER_EPOCH_MILLIS = 1_735_689_600_000L; // OrderIds' epoch
  /** Orders were created over the last 10 minutes; their deadlines are 30 min or 2 h after creation: none is due soon. */
  private static final long CREATED_OVER_MILLIS = 10 * 60 * 1000;
  private static final long SOONEST_TIMEOUT_MILLIS = 30 * 60 * 1000;
  private static final long LONGER_TIMEOUT_MILLIS = 2 * 60 * 60 * 1000;
  static final String BASELINE_COPY =
      "COPY (SELECT id, close_at, remind_at, reminded_at FROM orders WHERE status = 'UNPAID') TO STDOUT";
  /** The reload's page query (Sql.PENDING_PAGE), first page of shard 0, for its plan. */
  private static final String FIRST_PAGE = """
      SELECT id, close_at, remind_at, reminded_at FROM orders
      WHERE shard = 0 AND status = 'UNPAID' AND (close_at, id) > ('1970-01-01Z', 0)
      ORDER BY close_at, id LIMIT %d""";

  private final int orders;
  private final BenchDatabase db;
  private final AppConfig config;

  private ReloadBenchmark(int orders, BenchDatabase db, AppConfig config) {
    this.orders = orders;
    this.db = db;
    this.config = config;
  }

  public static void main(String[] args) throws Exception {
    int orders = args.length > 0 ? Integer.parseInt(args[0]) : 1_000_000;
    int runs = args.length > 1 ? Integer.parseInt(args[1]) : 3;
    if (System.getenv("OT_LOG_LEVEL") == null) {
      System.setProperty("OT_LOG_LEVEL", "WARN"); // read by logback.xml: keeps stdout to the summary line
    }
    AppConfig config = Results.serviceConfig(Map.of());
    try (BenchDatabase db = BenchDatabase.fresh("bench-db-reload")) {
      new ReloadBenchmark(orders, db, config).run(runs);
    }
    System.exit(0);
  }

  private void run(int runs) throws Exception {
    Instant seededAt = seed(db, orders);
    List<JsonObject> reloads = new ArrayList<>();
    List<JsonObject> copies = new ArrayList<>();
    for (int run = 0; run < runs; run++) {
      reloads.add(reload());
      copies.add(copyOut());
    }
    check("no deadline passed during the runs",
        db.number("SELECT count(*) FROM orders WHERE status = 'UNPAID' AND close_at <= now()") == 0);

    JsonArray plan = firstPagePlan();
    long reloadMillis = median(reloads, "reloadMillis");
    long copyMillis = median(copies, "millis");
    double ratio = (double) reloadMillis / copyMillis;
    boolean underTwoSeconds = reloadMillis <= 2000;
    boolean underTwiceBaseline = ratio <= 2;
    JsonObject result = Results.header("reload")
        .put("orders", orders)
        .put("runs", runs)
        .put("data", "unpaid orders without reminders, " + SHARDS + " shards, time-ordered ids created over the 10 minutes "
            + "before " + seededAt + ", deadline 30 min after creation (2 h for one in five), VACUUM ANALYZE after seeding")
        .put("config", new JsonObject()
            .put("reloadPageSize", config.timer().reloadPageSize())
            .put("poolSize", config.database().poolSize())
            .put("parallelReloads", parallelReloads()))
        .put("reload", new JsonObject()
            .put("measures", "TimerVerticle deployed on a fresh Vert.x (codecs registered, nothing else deployed); "
                + "NodeStats lastReloadMillis, i.e. from the first page query to the last timer scheduled, per shard "
                + "in keyset pages, parallelReloads shards at a time; deployMillis is the whole deploy")
            .put("medianMillis", reloadMillis)
            .put("firstRunMillis", reloads.get(0).getLong("reloadMillis"))
            .put("firstRunNote", "the first run is in a cold JVM, as the service's reload at start is")
            .put("runs", new JsonArray(reloads))
            .put("firstPagePlan", plan))
        .put("baseline", new JsonObject()
            .put("measures", BASELINE_COPY + " through the PostgreSQL JDBC driver's CopyManager into a discarding stream, "
                + "on a connection opened beforehand")
            .put("medianMillis", copyMillis)
            .put("runs", new JsonArray(copies)))
        .put("reloadVsBaseline", Results.round(ratio))
        .put("targets", new JsonObject()
            .put("reloadAtMost2Seconds", underTwoSeconds)
            .put("reloadAtMost2xBaseline", underTwiceBaseline));
    Results.write("reload", result);
    System.out.printf("reload: %,d unpaid orders, median of %d; service reload %d ms (first run, cold JVM: %d ms; the wheel "
            + "got %,d close timers), COPY baseline %d ms, reload %.2fx the baseline; targets <=2 s %s, <=2x %s%n",
        orders, runs, reloadMillis, reloads.get(0).getLong("reloadMillis"), reloads.get(0).getLong("closeTimers"),
        copyMillis, ratio, underTwoSeconds ? "met" : "MISSED", underTwiceBaseline ? "met" : "MISSED");
  }

  /** One reload by the real verticle on a fresh Vert.x, which is closed afterwards. */
  private JsonObject reload() throws Exception {
    Vertx vertx = Vertx.vertx();
    try {
      LocalCodec.registerAll(vertx);
      NodeStats stats = new NodeStats(new SimpleMeterRegistry(), SHARDS, Duration.ofMinutes(1));
      long started = System.nanoTime();
      await(vertx.deployVerticle(new TimerVerticle(config, db.setup.connectOptions(), stats, OwnedShards.all(config.database().shards()))));
      long deployMillis = (System.nanoTime() - started) / 1_000_000;
      NodeStats.Snapshot snapshot = stats.snapshot();
      long timers = snapshot.pendingTimers();
      check("the wheel got one close timer per order", timers == orders);
      return new JsonObject()
          .put("reloadMillis", snapshot.lastReloadMillis())
          .put("deployMillis", deployMillis)
          .put("closeTimers", timers);
    } finally {
      await(vertx.close());
    }
  }

  /** The floor: the same columns of the same rows streamed out of PostgreSQL as fast as it sends them. */
  private JsonObject copyOut() throws SQLException, IOException {
    try (Connection connection = db.setup.openJdbc()) {
      CopyManager copy = connection.unwrap(PGConnection.class).getCopyAPI();
      CountingSink sink = new CountingSink();
      long started = System.nanoTime();
      long rows = copy.copyOut(BASELINE_COPY, sink);
      long millis = (System.nanoTime() - started) / 1_000_000;
      check("COPY read every order", rows == orders);
      return new JsonObject().put("millis", millis).put("rows", rows).put("bytes", sink.bytes);
    }
  }

  private JsonArray firstPagePlan() throws SQLException {
    JsonArray lines = new JsonArray();
    try (Connection connection = db.setup.openJdbc(); Statement statement = connection.createStatement();
         ResultSet plan = statement.executeQuery("EXPLAIN (ANALYZE, BUFFERS) " + FIRST_PAGE.formatted(config.timer().reloadPageSize()))) {
      while (plan.next()) {
        lines.add(plan.getString(1));
      }
    }
    return lines;
  }

  /** TimerVerticle's private constant, read so that the JSON stays true if it changes. */
  private static int parallelReloads() throws ReflectiveOperationException {
    Field field = TimerVerticle.class.getDeclaredField("PARALLEL_RELOADS");
    field.setAccessible(true);
    return field.getInt(null);
  }

  /** Discards what it is given, counting the bytes. */
  private static final class CountingSink extends OutputStream {
    long bytes;

    @Override
    public void write(int b) {
      bytes++;
    }

    @Override
    public void write(byte[] b, int off, int len) {
      bytes += len;
    }
  }

  /**
   * Unpaid orders as the service writes them: time-ordered ids (node 1) and their shards, created over the last 10
   * minutes, deadline 30 min after creation (2 h for one in five, as with a longer timeoutSeconds), no reminder.
   * Streamed in with COPY, then VACUUM ANALYZE, as autovacuum would leave a table that has been there a while.
   */
  static Instant seed(BenchDatabase db, int orders) throws SQLException, IOException {
    Instant now = Instant.now();
    long firstMillis = now.toEpochMilli() - CREATED_OVER_MILLIS;
    try (Connection connection = db.setup.openJdbc()) {
      CopyManager copy = connection.unwrap(PGConnection.class).getCopyAPI();
      long rows = copy.copyIn("COPY orders (id, shard, client, user_id, category, status, created_at, close_at) FROM STDIN",
          new OrderRows(orders, firstMillis));
      check("seeded every order", rows == orders);
    }
    db.executeScript("VACUUM ANALYZE orders", "CHECKPOINT");
    return now;
  }

  /** The seed rows in COPY text format, generated as they are read. */
  private static final class OrderRows extends Reader {
    private final int orders;
    private final long firstMillis;
    private final StringBuilder pending = new StringBuilder();
    private int next;
    private int offset;
    private long lastMillis = -1;
    private long sequence;

    OrderRows(int orders, long firstMillis) {
      this.orders = orders;
      this.firstMillis = firstMillis;
    }

    @Override
    public int read(char[] buffer, int off, int len) {
      while (pending.length() - offset < len && next < orders) {
        appendRow(next++);
      }
      int available = Math.min(len, pending.length() - offset);
      if (available <= 0) {
        return -1;
      }
      pending.getChars(offset, offset + available, buffer, off);
      offset += available;
      if (offset > 1 << 16) {
        pending.delete(0, offset);
        offset = 0;
      }
      return available;
    }

    private void appendRow(int i) {
      long createdMillis = firstMillis + i * CREATED_OVER_MILLIS / orders;
      sequence = createdMillis == lastMillis ? sequence + 1 : 0;
      lastMillis = createdMillis;
      long id = ((createdMillis - ORDER_EPOCH_MILLIS) << 22) | ((long) NODE_ID << 12) | sequence;
      long closeMillis = createdMillis + (i % 5 == 4 ? LONGER_TIMEOUT_MILLIS : SOONEST_TIMEOUT_MILLIS);
      pending.append(id).append('\t').append(OrderIds.shardOf(id, SHARDS)).append("\tbench\tu-").append(i % 50_000)
          .append("\tphysical\tUNPAID\t").append(Instant.ofEpochMilli(createdMillis))
          .append('\t').append(Instant.ofEpochMilli(closeMillis)).append('\n');
    }

    @Override
    public void close() {}
  }

  private static long median(List<JsonObject> runs, String key) {
    return runs.stream().mapToLong(run -> run.getLong(key)).sorted().toArray()[runs.size() / 2];
  }

  private static <T> T await(io.vertx.core.Future<T> future) throws Exception {
    return future.toCompletionStage().toCompletableFuture().get(5, TimeUnit.MINUTES);
  }

  private static void check(String what, boolean ok) {
    if (!ok) {
      throw new IllegalStateException("check failed: " + what);
    }
  }

}
