package ordertimeout.bench;

import io.vertx.core.json.JsonObject;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Runs a Gatling simulation through the gatling-maven-plugin in a child Maven process (the service
 * under test runs in the calling JVM) and reads its figures from the "Global Information" table it prints.
 */
final class GatlingRun {
  private GatlingRun() {}

  record Result(boolean assertionsPassed, long requests, long failed, double meanPerSecond, double p50Ms, double p99Ms, double maxMs) {
    JsonObject toJson() {
      return new JsonObject().put("assertionsPassed", assertionsPassed).put("requests", requests).put("failed", failed)
          .put("meanPerSecond", meanPerSecond).put("p50Ms", p50Ms).put("p99Ms", p99Ms).put("maxMs", maxMs);
    }
  }

  static Result run(String simulationClass, Map<String, String> properties) throws IOException, InterruptedException {
    List<String> command = new ArrayList<>(List.of("mvn", "-q", "-B", "-Pbench", "gatling:test",
        "-Dgatling.simulationClass=" + simulationClass));
    properties.forEach((key, value) -> command.add("-D" + key + "=" + value));
    Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    StringBuilder output = new StringBuilder();
    try (BufferedReader reader = new BufferedReader(new InputStreamReader(process.getInputStream()))) {
      reader.lines().forEach(line -> {
        System.out.println(line);
        output.append(line).append('\n');
      });
    }
    int exit = process.waitFor();
    String table = output.toString();
    int global = table.lastIndexOf("Global Information");
    if (global < 0) {
      throw new IllegalStateException("Gatling printed no results (exit " + exit + ")");
    }
    table = table.substring(global);
    return new Result(exit == 0,
        (long) row(table, "request count", 1),
        (long) row(table, "request count", 3),
        row(table, "mean throughput \\(rps\\)", 1),
        row(table, "response time 50th percentile \\(ms\\)", 1),
        row(table, "response time 99th percentile \\(ms\\)", 1),
        row(table, "max response time \\(ms\\)", 1));
  }

  /** Column {@code column} (1 total, 2 OK, 3 KO; "-" reads as 0) of the row whose label matches. */
  private static double row(String table, String label, int column) {
    Matcher matcher = Pattern.compile("> " + label + "\\s*\\|([^|\\n]*)\\|([^|\\n]*)\\|([^|\\n]*)").matcher(table);
    if (!matcher.find()) {
      throw new IllegalStateException("no row '" + label + "' in Gatling's output");
    }
    String value = matcher.group(column).trim().replace(",", "");
    return value.equals("-") || value.isEmpty() ? 0 : Double.parseDouble(value);
  }
}
