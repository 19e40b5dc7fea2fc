package ordertimeout.faults;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What the checker found after one scenario. Must be zero: acknowledged writes lost (a create answered 201 whose order
 * is missing, a pay answered PAID whose order is not), refusals that committed anyway, two orders for one idempotency
 * key, orders closed twice, stock released twice (units beyond what was reserved), closes before their deadline,
 * invariant differences, events lost, and 500 answers (an outage is 503). Counted only: duplicate events (the relay
 * delivers at least once). Within the scenario's bounds: the worst lateness and the longest wait. The longest wait
 * counts only while the generator kept its schedule: one that sent a request over {@link #GENERATOR_LAG_LIMIT_MILLIS}
 * after its time (starved of CPU on the machine it shares with the cluster) measured itself, so the wait is then
 * inconclusive, neither a pass nor a failure.
 */
record Figures(String scenario, long seed, long ok, long failed, long unknown, long answered500, long lost,
               long failedYetCommitted, long duplicateCreates, long closedTwice, long releasedTwice, long early,
               long invariantDifferences, long eventsLost, long duplicateEvents, long worstLatenessMillis,
               long longestWaitMillis, long generatorLagMillis, Bounds bounds) {
  static final long GENERATOR_LAG_LIMIT_MILLIS = 1_000;

  /** What a scenario promises: no request waits longer than {@code waitMillis}, no close is later than {@code latenessMillis}. */
  record Bounds(long waitMillis, long latenessMillis) {}

  /** The must-be-zero figures that are not, and the bounds exceeded, by name; empty when the scenario passed. */
  Map<String, Long> violations() {
    Map<String, Long> violations = nonZero();
    if (worstLatenessMillis > bounds.latenessMillis()) {
      violations.put("worst lateness ms over " + bounds.latenessMillis(), worstLatenessMillis);
    }
    if (longestWaitMillis > bounds.waitMillis() && !waitInconclusive()) {
      violations.put("longest wait ms over " + bounds.waitMillis(), longestWaitMillis);
    }
    return violations;
  }

  boolean waitInconclusive() {
    return generatorLagMillis > GENERATOR_LAG_LIMIT_MILLIS;
  }

  String verdict() {
    if (!violations().isEmpty()) {
      return "FAIL";
    }
    return waitInconclusive() ? "pass, wait inconclusive (generator " + generatorLagMillis + " ms late)" : "pass";
  }

  /** The must-be-zero figures that are not, by name. */
  Map<String, Long> nonZero() {
    Map<String, Long> violations = new LinkedHashMap<>();
    Map<String, Long> mustBeZero = new LinkedHashMap<>();
    mustBeZero.put("500 answers", answered500);
    mustBeZero.put("acknowledged lost", lost);
    mustBeZero.put("refused yet committed", failedYetCommitted);
    mustBeZero.put("two orders for one key", duplicateCreates);
    mustBeZero.put("closed twice", closedTwice);
    mustBeZero.put("stock released twice", releasedTwice);
    mustBeZero.put("closed early", early);
    mustBeZero.put("invariant differences", invariantDifferences);
    mustBeZero.put("events lost", eventsLost);
    mustBeZero.forEach((name, value) -> {
      if (value != 0) {
        violations.put(name, value);
      }
    });
    return violations;
  }

  static String table(List<Figures> rows, List<String> notRun) {
    List<String[]> lines = new ArrayList<>();
    lines.add(new String[] {"scenario", "seed", "ok/failed/unknown", "500s", "lost", "refused+committed", "dup keys",
        "closed 2x", "released 2x", "early", "invariant diffs", "events lost", "dup events", "worst lateness ms",
        "longest wait ms", "generator lag ms", "bounds (wait/lateness ms)", "verdict"});
    for (Figures row : rows) {
      lines.add(new String[] {row.scenario, Long.toString(row.seed), row.ok + "/" + row.failed + "/" + row.unknown,
          Long.toString(row.answered500), Long.toString(row.lost), Long.toString(row.failedYetCommitted),
          Long.toString(row.duplicateCreates), Long.toString(row.closedTwice), Long.toString(row.releasedTwice),
          Long.toString(row.early), Long.toString(row.invariantDifferences), Long.toString(row.eventsLost),
          Long.toString(row.duplicateEvents), Long.toString(row.worstLatenessMillis), Long.toString(row.longestWaitMillis),
          Long.toString(row.generatorLagMillis), row.bounds.waitMillis() + " / " + row.bounds.latenessMillis(), row.verdict()});
    }
    StringBuilder table = new StringBuilder();
    for (int line = 0; line < lines.size(); line++) {
      table.append("| ").append(String.join(" | ", lines.get(line))).append(" |\n");
      if (line == 0) {
        table.append("|").append("---|".repeat(lines.get(0).length)).append("\n");
      }
    }
    notRun.forEach(reason -> table.append("not run: ").append(reason).append("\n"));
    return table.toString();
  }
}
