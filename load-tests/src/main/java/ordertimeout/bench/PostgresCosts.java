package ordertimeout.bench;

import io.vertx.core.json.JsonObject;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What PostgreSQL and this JVM spent over a window, per unit of work (an order created, an order closed): CPU from
 * /proc ({@link CpuWindow}), and the statements' time, planning and WAL from pg_stat_statements, printed with the
 * statements that took most; and what no statement's figures show, from the server's own counters: the checkpoints
 * that began in the window, the full-page images they caused in the WAL (the first change to each page after a
 * checkpoint logs the whole page), and the pages the sessions read into and wrote out of the shared buffers
 * themselves. Starting a window resets pg_stat_statements.
 */
final class PostgresCosts {
  /**
   * The server-wide counters, cumulative: a window's figure is the difference of two readings. A busy session reports
   * its share at most once a second (an idle one 10 s later), so a window of a few seconds reads them short: a
   * 20,000-order drain of 1.2 s read no WAL at all.
   */
  private static final List<String> SERVER_COUNTERS = List.of("checkpoints", "fullPageImages", "walBytes",
      "pagesReadBySessions", "pagesWrittenBySessions");
  /** {@link #SERVER_COUNTERS} in one statement, in that order. */
  private static final String READ_SERVER_COUNTERS = """
      SELECT (SELECT num_timed + num_requested FROM pg_stat_checkpointer),
             (SELECT wal_fpi FROM pg_stat_wal), (SELECT wal_bytes FROM pg_stat_wal),
             (SELECT coalesce(sum(reads), 0) FROM pg_stat_io WHERE backend_type = 'client backend'),
             (SELECT coalesce(sum(writes), 0) FROM pg_stat_io WHERE backend_type = 'client backend')""";

  private final BenchDatabase db;
  private final CpuWindow cpu;
  private final Map<String, Long> countersAtStart;

  private PostgresCosts(BenchDatabase db, CpuWindow cpu, Map<String, Long> countersAtStart) {
    this.db = db;
    this.cpu = cpu;
    this.countersAtStart = countersAtStart;
  }

  static PostgresCosts start(BenchDatabase db) {
    db.countStatements();
    Map<String, Long> counters = serverCounters(db);
    return new PostgresCosts(db, CpuWindow.start(db.postgresDataDir()), counters);
  }

  /**
   * Ends the window: {@code count} units of work ({@code unit}: "order", "close") were done in it. The JSON has
   * postgresCpuMicrosPer + Unit, jvmCpuMicrosPer + Unit, the CPU split and the top {@code topStatements} statements.
   */
  JsonObject stop(String heading, String unit, long count, int topStatements) {
    CpuWindow.Split split = cpu.stop(0);
    JsonObject statements = db.statementCosts(topStatements);
    long postgresMicros = Math.round(split.postgresCores() * split.seconds() * 1e6 / count);
    long backgroundMicros = Math.round(split.postgresBackgroundCores() * split.seconds() * 1e6 / count);
    long jvmMicros = Math.round(split.jvmCores() * split.seconds() * 1e6 / count);
    BenchDatabase.printStatements(heading + ": PostgreSQL CPU " + postgresMicros + " us (its background processes "
        + backgroundMicros + " us), this JVM " + jvmMicros + " us per " + unit, statements, unit, count);
    JsonObject server = new JsonObject();
    serverCounters(db).forEach((name, now) -> server.put(name, now - countersAtStart.get(name)));
    System.out.printf("%s. PostgreSQL's server-wide counters: %d checkpoints began; per %s %.2f full-page images in %d "
            + "bytes of WAL, %.2f pages read and %.2f written by the sessions themselves%n", heading,
        server.getLong("checkpoints"), unit, server.getLong("fullPageImages") / (double) count,
        server.getLong("walBytes") / count, server.getLong("pagesReadBySessions") / (double) count,
        server.getLong("pagesWrittenBySessions") / (double) count);
    String perUnit = Character.toUpperCase(unit.charAt(0)) + unit.substring(1);
    return new JsonObject().put("postgresCpuMicrosPer" + perUnit, postgresMicros).put("jvmCpuMicrosPer" + perUnit, jvmMicros)
        .put("cpu", split.toJson()).put("postgresStatements", statements).put("postgresServer", server);
  }

  private static Map<String, Long> serverCounters(BenchDatabase db) {
    double[] values = db.numbers(READ_SERVER_COUNTERS);
    Map<String, Long> counters = new LinkedHashMap<>();
    for (int i = 0; i < SERVER_COUNTERS.size(); i++) {
      counters.put(SERVER_COUNTERS.get(i), (long) values[i]);
    }
    return counters;
  }
}
