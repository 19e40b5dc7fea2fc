package ordertimeout.bench;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The report page from sample results: a section with an inline SVG chart for every result file (an older JSON without
 * the series, and a file that is not JSON, included), and nothing fetched from anywhere. Runs with the bench profile
 * only: {@code mvn -B -Pbench test -Dtest=BenchReportTest -Dsurefire.failIfNoSpecifiedTests=false}.
 */
class BenchReportTest {
  @TempDir
  Path results;

  @Test
  void everyResultGetsASectionWithAChartAndNothingIsFetched() throws Exception {
    Files.writeString(results.resolve("steady-state.json"), steadyState().encodePrettily());
    // as written before the series: no perSecond, no latenessHistogram, no commit
    Files.writeString(results.resolve("webhook.json"), new JsonObject().put("benchmark", "webhook").put("date", "2026-12-01")
        .put("eventsPerSecond", 1000).put("lagP50Ms", 139.5).put("lagP99Ms", 220.3).put("lagMaxMs", 262.9)
        // a URL in a result is only ever text, never a reference
        .put("postgresStatements", new JsonObject().put("top", new JsonArray().add(new JsonObject().put("query", "SELECT 'https://x'"))))
        .encodePrettily());
    Files.writeString(results.resolve("close-storm.json"), new JsonObject().put("benchmark", "close-storm")
        .put("service", new JsonObject().put("closesPerSecond", 62264.0).put("latenessP99Ms", 3200.0))
        .put("ceiling", new JsonObject().put("closesPerSecond", 72028.0)).encodePrettily());
    Files.writeString(results.resolve("empty.json"), "{}");
    // shapes the report does not expect: skipped, not a crash
    Files.writeString(results.resolve("odd.json"), "{\"benchmark\": \"odd\", \"date\": null, \"cpu\": {\"jvmCores\": \"x\"},"
        + " \"h\": {\"edgesMs\": [], \"counts\": [1]}, \"s\": {\"counts\": {\"a\": [1, \"x\", null]}, \"p99Ms\": {\"a\": []}},"
        + " \"l\": [[1, 2], {\"p50\": 1, \"p99\": \"slow\"}], \"perSecond\": \"fast\"}");
    Files.writeString(results.resolve("broken.json"), "{\"benchmark\": ");
    Path out = results.resolve("report.html");

    int sections = BenchReport.write(results, out);

    String html = Files.readString(out);
    assertThat(sections).isEqualTo(6);
    for (String name : new String[] {"steady-state", "webhook", "close-storm", "empty", "odd", "broken"}) {
      String section = section(html, name);
      assertThat(section).as(name).contains("<svg");
    }
    assertThat(html).doesNotContain("http://").doesNotContain("https://").doesNotContain("<script").doesNotContain("<link")
        .doesNotContain("@import").doesNotContain("url(");
    assertThat(section(html, "steady-state"))
        .contains("Throughput over time").contains("Latency p50 (dashed) and p99 over time")
        .contains("Lateness distribution").contains("CPU split").contains("abc1234")
        // the service's part without the generator's 0.17 and the JIT compilers' 0.12 of the JVM's 0.99
        .contains("<th>JIT compilers</th>").contains("<td>0.7</td><td>0.82</td><td>0.17</td><td>0.12</td>");
    assertThat(section(html, "webhook")).contains("Latency p50 (dark) and p99 (light)").contains("262.9");
    assertThat(section(html, "close-storm")).contains("Rates per variant").contains("62,264");
    assertThat(section(html, "broken")).contains("Not readable as JSON");
  }

  @Test
  void aNodeInAJvmOfItsOwnIsTheServicesPartOfTheCpuNotAnotherProcess() {
    JsonObject cpu = new JsonObject().put("jvmCores", 0.35).put("generatorCores", 0.29).put("jitCompilerCores", 0.02)
        .put("postgresCores", 0.58).put("otherProcessesCores", 0.74).put("idleCores", 0.3)
        .put("nodeJvm", new JsonObject().put("cores", 0.65));

    assertThat(BenchReport.cpuParts(cpu)).extracting(bar -> bar.label() + " " + Math.round(bar.value() * 100) / 100.0)
        .containsExactly("service JVM 0.65", "PostgreSQL 0.58", "generator 0.33", "JIT compilers 0.02",
            "other processes 0.09", "idle 0.3");
  }

  private static String section(String html, String name) {
    Matcher m = Pattern.compile("<section class=\"benchmark\" id=\"" + Pattern.quote(name) + "\">(.*?)</section>", Pattern.DOTALL)
        .matcher(html);
    assertThat(m.find()).as("a section for " + name).isTrue();
    return m.group(1);
  }

  /** A steady-state result as the benchmark writes it now: per-second series, the lateness histogram, the CPU split. */
  private static JsonObject steadyState() {
    PerSecond perSecond = new PerSecond(System.nanoTime() - 3_000_000_000L, 10, "second of the measured schedule")
        .counts("create sent", "create answered");
    long origin = System.nanoTime() - 3_000_000_000L;
    for (int second = 0; second < 3; second++) {
      long at = origin + second * 1_000_000_000L + 1_000_000;
      perSecond.count("create sent", at);
      perSecond.count("create answered", at);
      perSecond.latency("create", at, 5_000 + second * 1_000);
    }
    return new JsonObject().put("benchmark", "steady-state").put("date", "2026-12-01").put("commit", "abc1234")
        .put("ratePerSecond", 200).put("seconds", 3)
        .put("cpu", new JsonObject().put("seconds", 3.0).put("jvmCores", 0.99).put("generatorCores", 0.17)
            .put("jitCompilerCores", 0.12).put("postgresCores", 0.82).put("otherProcessesCores", 0.07)
            .put("idleCores", 0.12))
        .put("openLoad", new JsonObject()
            .put("createLatencyMs", new JsonObject().put("count", 3).put("p50", 6.0).put("p99", 7.0).put("max", 7.0))
            .put("perSecond", perSecond.toJson()))
        .put("latenessP50Ms", 9.5).put("latenessP99Ms", 46.4)
        .put("latenessHistogram", new JsonObject()
            .put("edgesMs", new JsonArray().add(0.0).add(1.0).add(10.0))
            .put("counts", new JsonArray().add(0).add(2).add(5).add(1)));
  }
}
