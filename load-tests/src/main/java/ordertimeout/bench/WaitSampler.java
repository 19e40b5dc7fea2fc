package ordertimeout.bench;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;

/**
 * What the service's PostgreSQL sessions are doing, sampled from pg_stat_activity every {@link #INTERVAL_MILLIS} ms
 * over a window: running a statement on CPU, waiting inside one (a lock, the WAL, I/O: its wait event), or in a
 * transaction waiting for the service's next statement ({@code idle in transaction}). Counted over every session and
 * per statement (its first words), so that a statement's time in pg_stat_statements can be told apart into work and
 * waits. Running counts as CPU, also while the session waits for a core. The sampling is one small query on its own
 * connection: about 2% of a core (0.45 ms a sample and 0.19 ms planning, in pg_stat_statements' top list).
 */
final class WaitSampler {
  static final long INTERVAL_MILLIS = 25;
  private static final String SAMPLE = """
      SELECT CASE WHEN state = 'idle in transaction' THEN 'idle in transaction (the service''s turn)'
                  ELSE coalesce(wait_event_type || ':' || wait_event, 'CPU') END AS doing,
             left(regexp_replace(query, '\\s+', ' ', 'g'), 48) AS statement
      FROM pg_stat_activity
      WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND application_name LIKE 'order-timeout%'
        AND state IN ('active', 'idle in transaction')""";

  private final Thread thread;
  private final Map<String, Long> overall = new TreeMap<>();
  private final Map<String, Map<String, Long>> byStatement = new TreeMap<>();
  private volatile boolean running = true;
  private long samples;

  private WaitSampler(BenchDatabase db) {
    thread = new Thread(() -> sample(db), "wait-sampler");
    thread.setDaemon(true);
  }

  static WaitSampler start(BenchDatabase db) {
    WaitSampler sampler = new WaitSampler(db);
    sampler.thread.start();
    return sampler;
  }

  private void sample(BenchDatabase db) {
    try (Connection c = db.setup.openJdbc(); Statement s = c.createStatement()) {
      while (running) {
        long next = System.currentTimeMillis() + INTERVAL_MILLIS;
        try (ResultSet r = s.executeQuery(SAMPLE)) {
          synchronized (this) {
            samples++;
            while (r.next()) {
              String doing = r.getString("doing");
              overall.merge(doing, 1L, Long::sum);
              byStatement.computeIfAbsent(r.getString("statement"), any -> new TreeMap<>()).merge(doing, 1L, Long::sum);
            }
          }
        }
        Thread.sleep(Math.max(0, next - System.currentTimeMillis()));
      }
    } catch (SQLException e) {
      throw new IllegalStateException("sampling pg_stat_activity", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * Starts the window over: what was sampled before is dropped. A sampler started before the warm-up has its
   * connection open and its code compiled by then; opening it as the window began cost about 100 ms of a busy
   * machine's time in the window's first second (2026-12-06).
   */
  synchronized void restart() {
    samples = 0;
    overall.clear();
    byStatement.clear();
  }

  /**
   * Ends the window: per state, the sessions in it on average (a sample counts each session once), and so for the
   * {@code topStatements} statements sampled most.
   */
  JsonObject stop(int topStatements) throws InterruptedException {
    running = false;
    thread.join(5000);
    synchronized (this) {
      JsonArray statements = new JsonArray();
      byStatement.entrySet().stream()
          .sorted(Comparator.comparingLong((Map.Entry<String, Map<String, Long>> e) -> total(e.getValue())).reversed())
          .limit(topStatements)
          .forEach(e -> statements.add(
              new JsonObject().put("statement", e.getKey()).put("sessions", sessions(e.getValue()))));
      return new JsonObject().put("samples", samples).put("intervalMillis", INTERVAL_MILLIS)
          .put("sessions", sessions(overall)).put("byStatement", statements);
    }
  }

  private JsonObject sessions(Map<String, Long> counts) {
    JsonObject json = new JsonObject();
    counts.entrySet().stream().sorted(Map.Entry.<String, Long>comparingByValue().reversed())
        .forEach(e -> json.put(e.getKey(), Math.round(e.getValue() * 1000.0 / Math.max(1, samples)) / 1000.0));
    return json;
  }

  private static long total(Map<String, Long> counts) {
    return counts.values().stream().mapToLong(Long::longValue).sum();
  }

  static void print(String label, JsonObject waits) {
    System.out.printf("%s. PostgreSQL sessions of the service, sampled every %d ms (%d samples), on average: %s%n",
        label, waits.getLong("intervalMillis"), waits.getLong("samples"), line(waits.getJsonObject("sessions")));
    for (Object entry : waits.getJsonArray("byStatement")) {
      JsonObject statement = (JsonObject) entry;
      System.out.printf("  %-48s %s%n", statement.getString("statement"), line(statement.getJsonObject("sessions")));
    }
  }

  private static String line(JsonObject sessions) {
    Map<String, Object> ordered = new LinkedHashMap<>(sessions.getMap());
    return ordered.entrySet().stream()
        .map(e -> e.getKey() + " " + String.format("%.2f", ((Number) e.getValue()).doubleValue()))
        .collect(Collectors.joining(", "));
  }
}
