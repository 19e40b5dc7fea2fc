package ordertimeout.bench;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import ordertimeout.config.AppConfig;
import ordertimeout.config.ConfigSource;
import ordertimeout.store.DatabaseSetup;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/** A fresh embedded PostgreSQL for one benchmark run, under target/bench-db, and JDBC helpers for seeding and checking. */
final class BenchDatabase implements AutoCloseable {
  final DatabaseSetup setup;
  private final Path dir;
  /** The folders this JVM holds, each until it ends (the operating system lets go of them then, however it ends). */
  private static final Map<Path, FileLock> HELD = new ConcurrentHashMap<>();

  private BenchDatabase(DatabaseSetup setup, Path dir) {
    this.setup = setup;
    this.dir = dir;
  }

  /** Where the embedded PostgreSQL keeps its data (its postmaster.pid names the postmaster, for {@link CpuWindow}). */
  Path postgresDataDir() {
    return dir.resolve("postgres");
  }

  static BenchDatabase fresh() {
    return fresh("bench-db");
  }

  /**
   * A fresh database in target/{@code name}, so that benchmarks running side by side do not share one. Two benchmarks
   * that use the same folder at once cannot both run: the second would delete the first one's data and stop its
   * PostgreSQL, and both would fail half-way. So this JVM holds target/{@code name}.lock while it runs, and a second
   * JVM asking for the same folder fails at once, saying so.
   */
  static BenchDatabase fresh(String name) {
    Path dir = Path.of("target", name);
    hold(dir);
    try {
      if (Files.exists(dir)) {
        try (var paths = Files.walk(dir)) {
          paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    // without fsync unless OT_DATABASE_EMBEDDED_FSYNC=true: every figure in docs/benchmarks.md was measured so
    Map<String, String> settings = new HashMap<>(Map.of("OT_DATABASE_URL", "", "OT_DATABASE_DATA_DIR", dir.toString(),
        "OT_DATABASE_POOL_SIZE", "16", "OT_DATABASE_SHARDS", "64", "OT_DATABASE_EMBEDDED_FSYNC", "false"));
    for (String variable : List.of("OT_DATABASE_EMBEDDED_FSYNC", "OT_DATABASE_EMBEDDED_SHARED_BUFFERS_MB",
        "OT_DATABASE_EMBEDDED_MAX_WAL_SIZE_MB")) {
      Optional.ofNullable(System.getenv(variable)).ifPresent(value -> settings.put(variable, value));
    }
    return new BenchDatabase(DatabaseSetup.prepare(config(settings).database()), dir);
  }

  private static void hold(Path dir) {
    Path lockFile = dir.resolveSibling(dir.getFileName() + ".lock");
    HELD.computeIfAbsent(lockFile.toAbsolutePath(), file -> {
      try {
        Files.createDirectories(file.getParent());
        FileLock lock = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE).tryLock();
        if (lock == null) {
          throw new IllegalStateException(dir + " is in use by another benchmark running now (it holds " + lockFile
              + "); run them one after another, or give this one a folder of its own");
        }
        return lock;
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    });
  }

  /** The configuration of conf/application.yaml with these OT_* overrides. */
  static AppConfig config(Map<String, String> overrides) {
    return AppConfig.from(ConfigSource.load(Path.of("conf/application.yaml"), overrides::get));
  }

  void execute(String sql, Object... params) {
    try (Connection c = setup.openJdbc(); PreparedStatement s = c.prepareStatement(sql)) {
      for (int i = 0; i < params.length; i++) {
        s.setObject(i + 1, params[i]);
      }
      s.execute();
    } catch (SQLException e) {
      throw new IllegalStateException(sql, e);
    }
  }

  void executeScript(String... statements) {
    try (Connection c = setup.openJdbc(); Statement s = c.createStatement()) {
      for (String sql : statements) {
        s.execute(sql);
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  double number(String sql, Object... params) {
    try (Connection c = setup.openJdbc(); PreparedStatement s = c.prepareStatement(sql)) {
      for (int i = 0; i < params.length; i++) {
        s.setObject(i + 1, params[i]);
      }
      try (ResultSet r = s.executeQuery()) {
        r.next();
        return r.getDouble(1);
      }
    } catch (SQLException e) {
      throw new IllegalStateException(sql, e);
    }
  }

  /** Every column of the first row of {@code sql}, as numbers. */
  double[] numbers(String sql) {
    try (Connection c = setup.openJdbc(); Statement s = c.createStatement(); ResultSet r = s.executeQuery(sql)) {
      r.next();
      double[] values = new double[r.getMetaData().getColumnCount()];
      for (int i = 0; i < values.length; i++) {
        values[i] = r.getDouble(i + 1);
      }
      return values;
    } catch (SQLException e) {
      throw new IllegalStateException(sql, e);
    }
  }

  /** The lateness histogram's bucket edges in ms: below 0 (early), [0, 1), [1, 2), ..., [5000, 10000), 10000 and above. */
  static final double[] LATENESS_EDGES_MS = {0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000};

  /**
   * How late the timeout closes of the orders {@code where} selects were (closed_at - close_at, the database's clock), for
   * the report's chart: {@code {"edgesMs": [0, 1, 2, 5, ...], "counts": [early, [0, 1), ..., at or above the last edge]}}.
   */
  JsonObject latenessHistogram(String where, Object... params) {
    long[] counts = new long[LATENESS_EDGES_MS.length + 1];
    StringBuilder edges = new StringBuilder();
    JsonArray edgesJson = new JsonArray();
    for (double edge : LATENESS_EDGES_MS) {
      edges.append(edges.length() == 0 ? "" : ",").append(edge);
      edgesJson.add(edge);
    }
    String sql = """
        SELECT width_bucket(extract(epoch FROM closed_at - close_at)::float8 * 1000, ARRAY[%s]::float8[]) AS bucket, count(*)
        FROM orders WHERE %s GROUP BY 1""".formatted(edges, where);
    try (Connection c = setup.openJdbc(); PreparedStatement s = c.prepareStatement(sql)) {
      for (int i = 0; i < params.length; i++) {
        s.setObject(i + 1, params[i]);
      }
      try (ResultSet r = s.executeQuery()) {
        while (r.next()) {
          counts[r.getInt(1)] += r.getLong(2);
        }
      }
    } catch (SQLException e) {
      throw new IllegalStateException(sql, e);
    }
    JsonArray countsJson = new JsonArray();
    for (long count : counts) {
      countsJson.add(count);
    }
    return new JsonObject().put("edgesMs", edgesJson).put("counts", countsJson);
  }

  /**
   * The timeout closes of the orders {@code where} selects, per second of their deadline from {@code fromEpochSeconds}:
   * {@code {"axis", "fromEpochMillis", "seconds", "counts": {"closes": [...]}, "p50Ms": {"lateness": [...]}, "p99Ms": {...}}}
   * (the shape of {@link PerSecond}'s JSON); deadlines before the start are left out, at most {@code maxSeconds} seconds.
   */
  JsonObject latenessPerSecond(double fromEpochSeconds, int maxSeconds, String where, Object... params) {
    String sql = """
        SELECT floor(extract(epoch FROM close_at) - ?)::int AS second, count(*),
               percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM closed_at - close_at) * 1000),
               percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM closed_at - close_at) * 1000)
        FROM orders WHERE %s AND extract(epoch FROM close_at) >= ? GROUP BY 1 ORDER BY 1""".formatted(where);
    long[] closes = new long[maxSeconds];
    Double[] p50 = new Double[maxSeconds];
    Double[] p99 = new Double[maxSeconds];
    int seconds = 0;
    try (Connection c = setup.openJdbc(); PreparedStatement s = c.prepareStatement(sql)) {
      s.setObject(1, fromEpochSeconds);
      for (int i = 0; i < params.length; i++) {
        s.setObject(i + 2, params[i]);
      }
      s.setObject(params.length + 2, fromEpochSeconds);
      try (ResultSet r = s.executeQuery()) {
        while (r.next()) {
          int second = r.getInt(1);
          if (second < 0 || second >= maxSeconds) {
            continue;
          }
          closes[second] = r.getLong(2);
          p50[second] = Math.round(r.getDouble(3) * 10) / 10.0;
          p99[second] = Math.round(r.getDouble(4) * 10) / 10.0;
          seconds = second + 1;
        }
      }
    } catch (SQLException e) {
      throw new IllegalStateException(sql, e);
    }
    JsonArray closesJson = new JsonArray();
    JsonArray p50Json = new JsonArray();
    JsonArray p99Json = new JsonArray();
    for (int i = 0; i < seconds; i++) {
      closesJson.add(closes[i]);
      p50Json.add(p50[i]);
      p99Json.add(p99[i]);
    }
    return new JsonObject().put("axis", "second of the deadlines (closes and their lateness by the deadline's second)")
        .put("fromEpochMillis", Math.round(fromEpochSeconds * 1000)).put("seconds", seconds)
        .put("counts", new JsonObject().put("closes", closesJson))
        .put("p50Ms", new JsonObject().put("lateness", p50Json)).put("p99Ms", new JsonObject().put("lateness", p99Json));
  }

  /**
   * Starts counting every statement from now on in pg_stat_statements (which the embedded PostgreSQL preloads), the
   * statements that triggers run included, with their planning apart from their execution.
   */
  void countStatements() {
    prepareStatementCounts();
    resetStatementCounts();
  }

  /**
   * The first half of {@link #countStatements()}: the extension and its settings, which every session of the server
   * reloads. Done before a window whose first second matters, so that only the reset falls in it.
   */
  void prepareStatementCounts() {
    executeScript("CREATE EXTENSION IF NOT EXISTS pg_stat_statements", "ALTER SYSTEM SET pg_stat_statements.track = 'all'",
        "ALTER SYSTEM SET pg_stat_statements.track_planning = on", "SELECT pg_reload_conf()");
  }

  /** The second half of {@link #countStatements()}: counting from now on. */
  void resetStatementCounts() {
    executeScript("SELECT pg_stat_statements_reset()");
  }

  /**
   * What PostgreSQL spent since {@link #countStatements()}: the {@code top} statements by total execution and planning
   * time (lock waits inside a statement count as its time), and the sums over the statements clients sent (not those
   * of triggers, which are inside them).
   */
  JsonObject statementCosts(int top) {
    JsonArray statements = new JsonArray();
    try (Connection c = setup.openJdbc(); Statement s = c.createStatement();
         ResultSet r = s.executeQuery("""
             SELECT calls, plans, total_exec_time, total_plan_time, rows, wal_bytes, toplevel, left(regexp_replace(query, '\\s+', ' ', 'g'), 120) AS query
             FROM pg_stat_statements ORDER BY total_exec_time + total_plan_time DESC LIMIT %d""".formatted(top))) {
      while (r.next()) {
        long calls = r.getLong("calls");
        statements.add(new JsonObject()
            .put("calls", calls)
            .put("totalMs", Math.round(r.getDouble("total_exec_time")))
            .put("meanMs", calls == 0 ? 0 : Math.round(r.getDouble("total_exec_time") / calls * 100) / 100.0)
            // per call: a cached plan (a trigger's, a generic one) is made once for many calls
            .put("planMsPerCall", calls == 0 ? 0 : Math.round(r.getDouble("total_plan_time") / calls * 100) / 100.0)
            .put("plans", r.getLong("plans"))
            .put("rows", r.getLong("rows"))
            .put("walBytes", r.getLong("wal_bytes"))
            .put("fromTrigger", !r.getBoolean("toplevel"))
            .put("query", r.getString("query")));
      }
    } catch (SQLException e) {
      throw new IllegalStateException("pg_stat_statements", e);
    }
    return new JsonObject()
        .put("top", statements)
        .put("totalMs", Math.round(number("SELECT coalesce(sum(total_exec_time), 0) FROM pg_stat_statements WHERE toplevel")))
        .put("planMs", Math.round(number("SELECT coalesce(sum(total_plan_time), 0) FROM pg_stat_statements")))
        .put("walBytes", (long) number("SELECT coalesce(sum(wal_bytes), 0) FROM pg_stat_statements WHERE toplevel"));
  }

  /**
   * {@link #statementCosts} as lines: per {@code unit} ({@code count} of them) over all statements, then the top ones.
   * Execution time includes lock waits; planning is apart.
   */
  static void printStatements(String label, JsonObject statements, String unit, long count) {
    System.out.printf("%s. PostgreSQL per %s: %.2f ms in statements (lock waits included), %.2f ms planning, %d bytes of WAL; "
            + "the statements that took most:%n", label, unit, statements.getLong("totalMs") / (double) count,
        statements.getLong("planMs") / (double) count, statements.getLong("walBytes") / count);
    for (Object entry : statements.getJsonArray("top")) {
      JsonObject statement = (JsonObject) entry;
      System.out.printf("  %7d ms %7d calls %7.2f ms each (+%.2f ms planning, %d plans) %10d WAL bytes %s%s%n", statement.getLong("totalMs"),
          statement.getLong("calls"), statement.getDouble("meanMs"), statement.getDouble("planMsPerCall"), statement.getLong("plans"),
          statement.getLong("walBytes"),
          statement.getBoolean("fromTrigger") ? "(trigger) " : "", statement.getString("query"));
    }
  }

  /** Orders with more than one PAID or CLOSED line in their log: 0 when every order ended once. */
  long endedMoreThanOnce() {
    return (long) number("""
        SELECT count(*) FROM (SELECT order_id FROM order_log WHERE event IN ('PAID', 'CLOSED')
                              GROUP BY order_id HAVING count(*) > 1) twice""");
  }

  /** SKUs whose reserved count is not the sum of their unpaid items: 0 when the stock invariant holds. */
  long stockInvariantViolations() {
    return (long) number("""
        SELECT count(*) FROM stock inv
        WHERE inv.reserved <> coalesce((SELECT sum(i.qty) FROM order_items i JOIN orders o ON o.id = i.order_id
                                        WHERE i.sku = inv.sku AND o.status = 'UNPAID'), 0)""");
  }

  @Override
  public void close() {
    setup.close();
  }
}
