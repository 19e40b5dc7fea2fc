package ordertimeout.support;

import io.vertx.core.json.JsonObject;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * One service node as a separate process ({@code java ordertimeout.Main} on the test class path)
 * against the shared test database (or the one {@code OT_DATABASE_URL} among the overrides names), with
 * OT_* overrides; its output goes to {@code target/nodes/fork-N/} (N the test JVM's), a restarted node's after its
 * earlier runs'. Its temp folder is one of its own there too (Vert.x's file cache, for one), deleted once the process
 * has ended: a node killed with SIGKILL cleans nothing up itself.
 */
public final class NodeProcess implements AutoCloseable {
  /** A folder per test JVM (Maven runs two side by side), which may each run a node of the same id at once. */
  private static final Path NODES_FOLDER = System.getProperty("ot.test.fork", "").isEmpty()
      ? Path.of("target", "nodes")
      : Path.of("target", "nodes", "fork-" + System.getProperty("ot.test.fork"));
  private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();

  private final int nodeId;
  private final int port;
  private final Process process;
  private final Path log;
  /** Where this start's output begins in {@link #log}, which every start of the node id appends to. */
  private final long logStart;
  private final Path tempFolder;

  private NodeProcess(int nodeId, int port, Process process, Path log, long logStart, Path tempFolder) {
    this.nodeId = nodeId;
    this.port = port;
    this.process = process;
    this.log = log;
    this.logStart = logStart;
    this.tempFolder = tempFolder;
  }

  public static NodeProcess start(int nodeId, Map<String, String> overrides) {
    return start(nodeId, overrides, List.of("-Xms256m", "-Xmx768m", "-XX:+UseSerialGC"));
  }

  /** With these JVM options rather than the tests' small heap and serial collector (none: as {@code java -jar}). */
  public static NodeProcess start(int nodeId, Map<String, String> overrides, List<String> jvmOptions) {
    int port = Ports.free();
    try {
      Path folder = Files.createDirectories(NODES_FOLDER);
      Path log = folder.resolve("node-" + nodeId + ".log");
      long logStart = Files.exists(log) ? Files.size(log) : 0;
      Path tempFolder = Files.createTempDirectory(folder, "node-" + nodeId + "-tmp").toAbsolutePath();
      List<String> command = new ArrayList<>();
      command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
      command.addAll(jvmOptions);
      command.add("-Djava.io.tmpdir=" + tempFolder);
      command.addAll(List.of("-cp", KafkaBroker.testClassPath(), "ordertimeout.Main"));
      ProcessBuilder builder = new ProcessBuilder(command)
          .redirectErrorStream(true)
          .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
      Map<String, String> environment = builder.environment();
      environment.keySet().removeIf(name -> name.startsWith("OT_"));
      environment.put("OT_NODE_ID", Integer.toString(nodeId));
      environment.put("OT_HTTP_PORT", Integer.toString(port));
      if (!overrides.containsKey("OT_DATABASE_URL")) {
        environment.put("OT_DATABASE_URL", TestDatabase.url());
      }
      environment.put("OT_LOGGING_FORMAT", "text");
      environment.putAll(overrides);
      return new NodeProcess(nodeId, port, builder.start(), log, logStart, tempFolder);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  public int nodeId() {
    return nodeId;
  }

  public int port() {
    return port;
  }

  /** The node id's log, with the output of its earlier starts (of this run and of earlier runs) before this one's. */
  public Path log() {
    return log;
  }

  /** What this start wrote to {@link #log()} so far. */
  public String output() throws IOException {
    try (InputStream in = Files.newInputStream(log)) {
      in.skipNBytes(logStart);
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  public long pid() {
    return process.pid();
  }

  /** SIGSTOP: the node freezes where it is, its connections and locks held. */
  public void pause() {
    Signals.stop(process.pid());
  }

  /** SIGCONT after {@link #pause()}. */
  public void resume() {
    Signals.resume(process.pid());
  }

  public boolean isAlive() {
    return process.isAlive();
  }

  /** GET /health/ready answers 200. */
  public boolean ready() {
    try {
      HttpResponse<String> response = HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/health/ready"))
          .timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString());
      return response.statusCode() == 200;
    } catch (IOException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /** GET /v1/admin/stats with the admin key. */
  public JsonObject stats() {
    return new JsonObject(get("/v1/admin/stats"));
  }

  /** GET /metrics: Prometheus text. */
  public String metrics() {
    return get("/metrics");
  }

  private String get(String path) {
    try {
      HttpResponse<String> response = HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
              .header("Authorization", "Bearer " + Api.ADMIN_KEY).timeout(Duration.ofSeconds(10)).build(),
          HttpResponse.BodyHandlers.ofString());
      return response.body();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /** SIGKILL: no drain, no leaving the group, no flushing. */
  public void kill() {
    process.destroyForcibly();
    try {
      if (process.waitFor(30, TimeUnit.SECONDS)) {
        TempFolders.delete(tempFolder);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** SIGTERM, then SIGKILL after 30 s. */
  @Override
  public void close() {
    if (!process.isAlive()) {
      TempFolders.delete(tempFolder);
      return;
    }
    process.destroy();
    try {
      if (process.waitFor(30, TimeUnit.SECONDS)) {
        TempFolders.delete(tempFolder);
      } else {
        kill();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
