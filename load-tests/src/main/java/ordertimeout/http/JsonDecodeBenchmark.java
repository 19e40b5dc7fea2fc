package ordertimeout.http;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.Json;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import ordertimeout.bench.WheelBenchmark;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;

import java.util.Collection;
import java.util.concurrent.TimeUnit;

/**
 * A create's body decoded by {@link StrictJson} (which refuses comments and a member twice) against Vert.x's
 * {@code Json.decodeValue}, which the service used before, in one run, with 1 and 50 items (decision 0048). Prints
 * one line: nanoseconds a body for each. Run:
 * {@code mvn -B -Pbench test-compile exec:java -Dmain.class=ordertimeout.http.JsonDecodeBenchmark}
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class JsonDecodeBenchmark {
  @Param({"1", "50"})
  int items;
  Buffer body;

  @Setup
  public void setup() {
    JsonArray list = new JsonArray();
    for (int i = 0; i < items; i++) {
      list.add(new JsonObject().put("sku", "SKU-" + i).put("qty", 1 + i % 3));
    }
    body = new JsonObject().put("userId", "user-12345").put("category", "virtual").put("timeoutSeconds", 600)
        .put("items", list).toBuffer();
  }

  @Benchmark
  public Object vertx() {
    return Json.decodeValue(body);
  }

  @Benchmark
  public Object strict() {
    return StrictJson.decode(body);
  }

  public static void main(String[] args) throws Exception {
    WheelBenchmark.exposeClassPath();
    Options options = new OptionsBuilder()
        .include(JsonDecodeBenchmark.class.getName() + "\\.")
        .forks(1)
        .warmupIterations(4)
        .warmupTime(TimeValue.seconds(1))
        .measurementIterations(6)
        .measurementTime(TimeValue.seconds(1))
        .jvmArgs("-Xmx512m")
        .build();
    Collection<RunResult> results = new Runner(options).run();
    StringBuilder line = new StringBuilder("json-decode:");
    for (RunResult result : results) {
      line.append(String.format(" %s with %s items %.0f ns;", result.getParams().getBenchmark().replaceAll(".*\\.", ""),
          result.getParams().getParam("items"), result.getPrimaryResult().getScore()));
    }
    System.out.println(line);
  }
}
