package ordertimeout.support;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.Uuid;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * A real Kafka broker (KRaft: broker and controller in one process, from the kafka_2.13 test
 * dependency) in a JVM of its own on loopback ports. {@link #shared()} is one broker per test JVM
 * (Maven runs two), stopped when the JVM exits; a test that needs to stop and restart a broker starts its own.
 * The broker's output goes to {@code server.log} in its folder.
 */
public final class KafkaBroker implements AutoCloseable {
  private static final Duration READY_TIMEOUT = Duration.ofSeconds(90);
  private static KafkaBroker shared;

  private final Path folder;
  /** A folder of its own in the temp folder, deleted on {@link #close()}; not the local stack's. */
  private final boolean temporary;
  private final int port;
  private final int controllerPort;
  private Process process;

  private KafkaBroker(Path folder, boolean temporary, int port, int controllerPort) {
    this.folder = folder;
    this.temporary = temporary;
    this.port = port;
    this.controllerPort = controllerPort;
  }

  public static synchronized KafkaBroker shared() {
    if (shared == null) {
      shared = startNew();
      Runtime.getRuntime().addShutdownHook(new Thread(shared::close, "stop-test-kafka"));
    }
    return shared;
  }

  /** A broker of the caller's own, in a fresh folder; the caller closes it, which deletes the folder. */
  public static KafkaBroker startNew() {
    try {
      KafkaBroker broker = new KafkaBroker(TempFolders.create("order-timeout-test-kafka"), true, Ports.free(), Ports.free());
      broker.format();
      broker.start();
      return broker;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * A broker on the given ports keeping its data in {@code folder} across runs (for the local stack):
   * formatted on first use, started as it is afterwards.
   */
  public static KafkaBroker startAt(Path folder, int port, int controllerPort) {
    try {
      Files.createDirectories(folder);
      KafkaBroker broker = new KafkaBroker(folder.toAbsolutePath(), false, port, controllerPort);
      if (!Files.exists(broker.properties())) {
        broker.format();
      }
      broker.start();
      return broker;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The broker's process (its own JVM). */
  public synchronized long pid() {
    return process.pid();
  }

  public String bootstrapServers() {
    return "127.0.0.1:" + port;
  }

  /** Starts the broker again on the same ports and data (after {@link #stop()}). */
  public synchronized void start() {
    if (process != null && process.isAlive()) {
      return;
    }
    process = launch("kafka.Kafka", properties().toString());
    awaitReady();
  }

  /** Stops the broker process (SIGTERM, then SIGKILL after 30 s) and keeps its data. */
  public synchronized void stop() {
    if (process == null) {
      return;
    }
    process.destroy();
    try {
      if (!process.waitFor(30, TimeUnit.SECONDS)) {
        process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    process = null;
  }

  /** SIGSTOP: the broker freezes with its connections open; producers and consumers hear nothing until {@link #resume()}. */
  public synchronized void pause() {
    Signals.stop(process.pid());
  }

  public synchronized void resume() {
    Signals.resume(process.pid());
  }

  /** Stops the broker; a broker of {@link #startNew()} loses its folder too. */
  @Override
  public void close() {
    stop();
    if (temporary) {
      TempFolders.delete(folder);
    }
  }

  /** An admin client of this broker; like the service's topic check, it does not rebootstrap (a log flood). */
  public Admin admin() {
    return Admin.create(Map.of(
        AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers(),
        AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 20_000,
        AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000,
        AdminClientConfig.METADATA_RECOVERY_STRATEGY_CONFIG, "none"));
  }

  private void format() throws IOException {
    Files.writeString(properties(), """
        process.roles=broker,controller
        node.id=1
        controller.quorum.voters=1@127.0.0.1:%d
        listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d
        advertised.listeners=PLAINTEXT://127.0.0.1:%d
        controller.listener.names=CONTROLLER
        inter.broker.listener.name=PLAINTEXT
        listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
        log.dirs=%s
        num.partitions=1
        auto.create.topics.enable=false
        offsets.topic.replication.factor=1
        offsets.topic.num.partitions=4
        transaction.state.log.replication.factor=1
        transaction.state.log.min.isr=1
        share.coordinator.state.topic.replication.factor=1
        share.coordinator.state.topic.min.isr=1
        group.initial.rebalance.delay.ms=0
        group.min.session.timeout.ms=1000
        """.formatted(controllerPort, port, controllerPort, port, folder.resolve("data")));
    Process storage = launch("kafka.tools.StorageTool",
        "format", "--cluster-id", Uuid.randomUuid().toString(), "--config", properties().toString());
    try {
      if (!storage.waitFor(120, TimeUnit.SECONDS) || storage.exitValue() != 0) {
        throw new IllegalStateException("formatting the Kafka storage failed; see " + folder.resolve("server.log"));
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private Path properties() {
    return folder.resolve("server.properties");
  }

  private Process launch(String mainClass, String... args) {
    List<String> command = new ArrayList<>(List.of(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-Xms128m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
        "-Dlog4j2.level=WARN",
        "-cp", testClassPath(), mainClass));
    command.addAll(List.of(args));
    try {
      File log = folder.resolve("server.log").toFile();
      return new ProcessBuilder(command)
          .redirectErrorStream(true)
          .redirectOutput(ProcessBuilder.Redirect.appendTo(log))
          .start();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * The class path this code runs with, for the JVMs it starts: Surefire runs the tests from a
   * manifest-only jar and hands the real class path in a property; exec:java runs them in a class
   * loader of its own.
   */
  static String testClassPath() {
    String surefire = System.getProperty("surefire.test.class.path");
    if (surefire != null) {
      return surefire;
    }
    if (Thread.currentThread().getContextClassLoader() instanceof URLClassLoader loader && loader.getURLs().length > 0) {
      return Arrays.stream(loader.getURLs()).map(KafkaBroker::toPath).collect(Collectors.joining(File.pathSeparator));
    }
    return System.getProperty("java.class.path");
  }

  private static String toPath(URL url) {
    try {
      return Path.of(url.toURI()).toString();
    } catch (URISyntaxException e) {
      throw new IllegalStateException(e);
    }
  }

  private void awaitReady() {
    long deadline = System.nanoTime() + READY_TIMEOUT.toNanos();
    try (Admin admin = admin()) {
      while (true) {
        try {
          admin.describeCluster().nodes().get(5, TimeUnit.SECONDS);
          return;
        } catch (Exception notYet) {
          if (!process.isAlive()) {
            throw new IllegalStateException("the Kafka broker exited with " + process.exitValue()
                + "; see " + folder.resolve("server.log"));
          }
          if (System.nanoTime() > deadline) {
            throw new IllegalStateException("the Kafka broker was not ready after " + READY_TIMEOUT
                + "; see " + folder.resolve("server.log"), notYet);
          }
          Thread.sleep(200);
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

}
