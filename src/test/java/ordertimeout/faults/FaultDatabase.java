package ordertimeout.faults;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import ordertimeout.store.DatabaseSetup;
import ordertimeout.support.Await;
import ordertimeout.support.Ports;
import ordertimeout.support.Signals;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A PostgreSQL of the fault suite's own (the embedded one's binaries), on a fixed port and data folder, so that it
 * can be stopped with {@code pg_ctl stop -m immediate} (a crash: no checkpoint, no goodbye to the clients) and
 * started again where it was. The postmaster's command line is read from {@code /proc} once it runs, and a restart
 * runs that same command. Commits are synchronous (the embedded default is not): a commit acknowledged before the
 * crash must survive it. {@link #close()} stops it and deletes its folder.
 */
final class FaultDatabase implements AutoCloseable {
  private static final Duration START_TIMEOUT = Duration.ofSeconds(60);

  private final Path folder;
  private final Path dataDir;
  private final int port;
  private final List<String> postmasterCommand;

  private FaultDatabase(Path folder, Path dataDir, int port, List<String> postmasterCommand) {
    this.folder = folder;
    this.dataDir = dataDir;
    this.port = port;
    this.postmasterCommand = postmasterCommand;
  }

  /** Starts it in a new temporary folder and migrates it as a node would. */
  static FaultDatabase start() {
    try {
      Path folder = Files.createTempDirectory("order-timeout-faults-db");
      Path dataDir = folder.resolve("data");
      int port = Ports.free();
      // zonky's own close stops it with pg_ctl, which refuses to run as root: close() below signals the postmaster itself
      EmbeddedPostgres.builder()
          .setDataDirectory(dataDir)
          .setCleanDataDirectory(false)
          .setRegisterShutdownHook(false)
          .setPort(port)
          .setServerConfig("max_connections", "300")
          .setServerConfig("shared_buffers", "128MB")
          .setServerConfig("synchronous_commit", "on")
          .setOutputRedirector(ProcessBuilder.Redirect.appendTo(folder.resolve("postgres.log").toFile()))
          .setErrorRedirector(ProcessBuilder.Redirect.appendTo(folder.resolve("postgres.log").toFile()))
          .start();
      FaultDatabase database = new FaultDatabase(folder, dataDir, port, postmasterCommand(dataDir));
      try {
        DatabaseSetup.prepare(TestDatabase.databaseConfig(Map.of("OT_DATABASE_URL", database.url(port),
            "OT_DATABASE_POOL_SIZE", "2", "OT_DATABASE_SHARDS", Integer.toString(FaultCluster.SHARDS)))).close();
        return database;
      } catch (RuntimeException e) {
        database.close();
        throw e;
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * The running postmaster's command line, from its pid in {@code postmaster.pid}; as root, behind {@code unshare -U}
   * as zonky starts it (PostgreSQL refuses to run as root; in a user namespace of its own it is not).
   */
  private static List<String> postmasterCommand(Path dataDir) throws IOException {
    String pid = Files.readAllLines(dataDir.resolve("postmaster.pid")).get(0).trim();
    String cmdline = Files.readString(Path.of("/proc", pid, "cmdline"), StandardCharsets.UTF_8);
    List<String> command = new ArrayList<>();
    if ("root".equals(System.getProperty("user.name"))) {
      command.addAll(List.of("unshare", "-U"));
    }
    command.addAll(Arrays.asList(cmdline.split("\0")));
    return command;
  }

  int port() {
    return port;
  }

  /** The database as a {@code database.url}, reached on {@code viaPort} (the port of a proxy in front of it, or its own). */
  String url(int viaPort) {
    return "postgresql://postgres:postgres@127.0.0.1:" + viaPort + "/postgres";
  }

  Connection jdbc() throws SQLException {
    return DriverManager.getConnection("jdbc:postgresql://127.0.0.1:" + port + "/postgres", "postgres", "postgres");
  }

  List<Map<String, Object>> rows(String sql, Object... params) {
    try (Connection connection = jdbc()) {
      return Sql.rows(connection, sql, params);
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  long count(String sql, Object... params) {
    return ((Number) rows(sql, params).get(0).values().iterator().next()).longValue();
  }

  /**
   * An immediate shutdown ({@code pg_ctl stop -m immediate} sends the postmaster this SIGQUIT; pg_ctl itself refuses to
   * run as root): every backend killed at once, no checkpoint, recovery from the WAL at the next start.
   */
  void crash() {
    stopPostmaster("QUIT");
  }

  /** Runs the postmaster again on the same port and data, and waits until it answers. */
  synchronized void startAgain() {
    Process restarted;
    try {
      restarted = new ProcessBuilder(postmasterCommand).redirectErrorStream(true)
          .redirectOutput(ProcessBuilder.Redirect.appendTo(folder.resolve("postgres.log").toFile())).start();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
    while (true) {
      try (Connection ignored = jdbc()) {
        return;
      } catch (SQLException notYet) {
        if (System.nanoTime() > deadline || !restarted.isAlive()) {
          throw new IllegalStateException("PostgreSQL did not start again; see " + folder.resolve("postgres.log"), notYet);
        }
        Await.sleep(200);
      }
    }
  }

  @Override
  public synchronized void close() {
    stopPostmaster("INT");
    try (Stream<Path> files = Files.walk(folder)) {
      files.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Sends the running postmaster {@code signal} (INT: a fast shutdown) and waits for it to exit; SIGKILL after a minute. */
  private void stopPostmaster(String signal) {
    Path pidFile = dataDir.resolve("postmaster.pid");
    if (!Files.exists(pidFile)) {
      return;
    }
    long pid;
    try {
      pid = Long.parseLong(Files.readAllLines(pidFile).get(0).trim());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    ProcessHandle.of(pid).ifPresent(postmaster -> {
      Signals.send(signal, pid);
      try {
        postmaster.onExit().get(60, TimeUnit.SECONDS);
      } catch (Exception notYet) {
        postmaster.destroyForcibly();
      }
    });
  }
}
