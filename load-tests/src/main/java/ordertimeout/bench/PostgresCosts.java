package ordertimeout.bench;

import io.vertx.core.json.JsonObject;

/**
 * What PostgreSQL and this JVM spent over a window, per unit of work (an order created, an order closed): CPU from
 * /proc ({@link CpuWindow}), and the statements' time, planning and WAL from pg_stat_statements, printed with the
 * statements that took most. Starting a window resets pg_stat_statements.
 */
final class PostgresCosts {
  private final BenchDatabase db;
  private final CpuWindow cpu;

  private PostgresCosts(BenchDatabase db, CpuWindow cpu) {
    this.db = db;
    this.cpu = cpu;
  }

  static PostgresCosts start(BenchDatabase db) {
    db.countStatements();
    return new PostgresCosts(db, CpuWindow.start(db.postgresDataDir()));
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
    String perUnit = Character.toUpperCase(unit.charAt(0)) + unit.substring(1);
    return new JsonObject().put("postgresCpuMicrosPer" + perUnit, postgresMicros).put("jvmCpuMicrosPer" + perUnit, jvmMicros)
        .put("cpu", split.toJson()).put("postgresStatements", statements);
  }
}
