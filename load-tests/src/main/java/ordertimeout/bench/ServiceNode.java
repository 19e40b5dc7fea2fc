package ordertimeout.bench;

import io.vertx.core.json.JsonObject;
import io.vertx.pgclient.PgConnectOptions;
import ordertimeout.Service;
import ordertimeout.bus.DueOrders;
import ordertimeout.config.AppConfig;
import ordertimeout.support.NodeProcess;
import ordertimeout.support.Prometheus;
import ordertimeout.support.TestDatabase;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The node a benchmark's load goes to: in the benchmark's JVM, or in a JVM of its own started as {@code java -jar}
 * starts it (no heap or collector options), its garbage collections logged. In one JVM the generator's garbage is
 * collected with the service's, and a request due in a pause of either counts it (docs/benchmarks.md): a JVM of its
 * own tells the service's part.
 */
final class ServiceNode implements AutoCloseable {
  /** A pause's line of {@code -Xlog:gc} decorated with the wall clock: {@code [1796649776762ms] GC(3) Pause ...}. */
  private static final Pattern PAUSE = Pattern.compile("^\\[(\\d+)ms].* Pause .* (\\d+\\.\\d+)ms$");

  private final Service inThisJvm;
  private final NodeProcess ownJvm;
  private final Path gcLog;
  private final int port;

  private ServiceNode(Service inThisJvm, NodeProcess ownJvm, Path gcLog, int port) {
    this.inThisJvm = inThisJvm;
    this.ownJvm = ownJvm;
    this.gcLog = gcLog;
    this.port = port;
  }

  /** Started in this JVM with the service's configuration and {@code settings} over it, once it owns every shard. */
  static ServiceNode inThisJvm(Map<String, String> settings, PgConnectOptions database) throws Exception {
    int port = Results.freePort();
    Map<String, String> withPort = new HashMap<>(settings);
    withPort.put("OT_HTTP_PORT", Integer.toString(port));
    AppConfig config = Results.serviceConfig(withPort);
    // As the jar starts it: its HTTP requests timed, Vert.x's pools and event bus reported to the node's registry, at a
    // cost per request that a bare Vert.x instance would leave out.
    Service service = Service.start(config, database).toCompletionStage().toCompletableFuture()
        .get(1, TimeUnit.MINUTES);
    long ownsAllBy = System.currentTimeMillis() + 120_000;
    while (service.ownedShards().list().length < config.database().shards() && System.currentTimeMillis() < ownsAllBy) {
      Thread.sleep(100);
    }
    if (service.ownedShards().list().length < config.database().shards()) {
      service.stop().toCompletionStage().toCompletableFuture().get(1, TimeUnit.MINUTES);
      throw new IllegalStateException("the node owned " + service.ownedShards().list().length + " of "
          + config.database().shards() + " shards after 120 s: its timers would not all reach its wheel");
    }
    return new ServiceNode(service, null, null, port);
  }

  /**
   * Started in a JVM of its own with this process's OT_* settings and {@code settings} over them, once it is ready
   * (every shard it owns loaded); its output in target/nodes/. {@code -Dsteady.nodeJvmOptions} (none) adds JVM
   * options, space-separated.
   */
  static ServiceNode inOwnJvm(Map<String, String> settings, PgConnectOptions database) throws Exception {
    Map<String, String> environment = new HashMap<>();
    System.getenv().forEach((name, value) -> {
      if (name.startsWith("OT_")) {
        environment.put(name, value);
      }
    });
    environment.putAll(settings);
    environment.put("OT_DATABASE_URL", TestDatabase.url(database));
    Path gcLog = Files.createDirectories(Path.of("target", "nodes")).resolve("benchmark-node-gc.log").toAbsolutePath();
    Files.deleteIfExists(gcLog);
    List<String> jvmOptions = new ArrayList<>(List.of("-Xlog:gc:file=" + gcLog + ":timemillis"));
    String more = System.getProperty("steady.nodeJvmOptions", "").trim();
    if (!more.isEmpty()) {
      jvmOptions.addAll(List.of(more.split("\\s+")));
    }
    NodeProcess node = NodeProcess.start(1, environment, jvmOptions);
    long readyBy = System.currentTimeMillis() + 120_000;
    while (!node.ready()) {
      if (!node.isAlive() || System.currentTimeMillis() > readyBy) {
        node.close();
        throw new IllegalStateException("the node in its own JVM was not ready within 120 s; see " + node.log());
      }
      Thread.sleep(200);
    }
    return new ServiceNode(null, node, gcLog, node.port());
  }

  int port() {
    return port;
  }

  /** Orders the sweep closed on their deadline: the wheel missed them. */
  long sweepCloses() {
    if (inThisJvm != null) {
      return inThisJvm.stats().timeoutCloses(DueOrders.Path.SWEEP);
    }
    return (long) new Prometheus(ownJvm.metrics()).sum("ordertimeout_closes_total", "reason", "TIMEOUT",
        "path", DueOrders.Path.SWEEP.name().toLowerCase(Locale.ROOT));
  }

  /** Where a window of the node's own JVM begins: the wall clock and its CPU so far; null in this JVM. */
  Mark mark() {
    return ownJvm == null ? null
        : new Mark(System.currentTimeMillis(), CpuWindow.processTicks(List.of(ownJvm.pid()))[0]);
  }

  record Mark(long epochMillis, long ticks) {}

  /** The node's own JVM from {@code from} to now: its cores, and its garbage collections' pauses that began then. */
  JsonObject since(Mark from) {
    long now = System.currentTimeMillis();
    long ticks = CpuWindow.processTicks(List.of(ownJvm.pid()))[0];
    double seconds = (now - from.epochMillis()) / 1000.0;
    List<Double> pauses = pausesBetween(from.epochMillis(), now);
    return new JsonObject()
        .put("cores", Results.round((ticks - from.ticks()) / CpuWindow.TICKS_PER_SECOND / seconds))
        .put("gcPauses", pauses.size())
        .put("gcPauseMillis", Results.round(pauses.stream().mapToDouble(Double::doubleValue).sum()))
        .put("gcPauseMaxMillis", Results.round(pauses.stream().mapToDouble(Double::doubleValue).max().orElse(0)))
        .put("gcLog", gcLog.toString());
  }

  private List<Double> pausesBetween(long fromEpochMillis, long toEpochMillis) {
    List<Double> pauses = new ArrayList<>();
    try {
      for (String line : Files.readAllLines(gcLog)) {
        Matcher pause = PAUSE.matcher(line);
        if (pause.matches()) {
          long at = Long.parseLong(pause.group(1));
          if (at >= fromEpochMillis && at <= toEpochMillis) {
            pauses.add(Double.parseDouble(pause.group(2)));
          }
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return pauses;
  }

  @Override
  public void close() throws Exception {
    if (inThisJvm != null) {
      inThisJvm.stop().toCompletionStage().toCompletableFuture().get(1, TimeUnit.MINUTES);
    } else {
      ownJvm.close();
    }
  }
}
