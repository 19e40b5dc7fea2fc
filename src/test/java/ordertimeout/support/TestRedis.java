package ordertimeout.support;

import redis.embedded.core.ExecutableProvider;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A real redis-server on a free loopback port, in a temporary folder, without persistence: the binary
 * that the Maven artifact embedded-redis ships, or Debian's redis-server (installed with apt-get when
 * missing) where that one does not run. {@link #stop()} and {@link #restart()} (same port, empty data)
 * let a test take Redis away; {@link #close()} stops it for good, and a shutdown hook stops it if the JVM
 * exits first. Only this process is ever killed, by its handle.
 */
public final class TestRedis implements AutoCloseable {
  private static final Path DEBIAN_REDIS = Path.of("/usr/bin/redis-server");
  private static Path executable;

  private final int port;
  private final Path dir;
  /** A folder of its own in the temp folder, deleted once the server is stopped for good; not the local stack's. */
  private final boolean temporary;
  private final List<String> settings;
  private final Thread shutdownHook;
  private Process process;

  private TestRedis(int port, Path dir, boolean temporary, List<String> settings) {
    this.port = port;
    this.dir = dir;
    this.temporary = temporary;
    this.settings = settings;
    this.shutdownHook = new Thread(this::stopForGood, "stop-test-redis-" + port);
    Runtime.getRuntime().addShutdownHook(shutdownHook);
  }

  /** Starts one; {@code settings} are extra redis-server arguments, e.g. "--notify-keyspace-events", "Ex". */
  public static TestRedis start(String... settings) {
    TestRedis redis = new TestRedis(Ports.free(), TempFolders.create("ot-test-redis"), true, List.of(settings));
    redis.restart();
    return redis;
  }

  /** One on the given port, keeping its files in {@code dir} (for the local stack). */
  public static TestRedis startOn(int port, Path dir) {
    try {
      TestRedis redis = new TestRedis(port, Files.createDirectories(dir), false, List.of());
      redis.restart();
      return redis;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  public int port() {
    return port;
  }

  public String url() {
    return "redis://127.0.0.1:" + port;
  }

  public synchronized boolean isRunning() {
    return process != null && process.isAlive();
  }

  /** Starts the server again on the same port (empty: nothing is persisted). */
  public synchronized void restart() {
    if (isRunning()) {
      return;
    }
    List<String> command = new ArrayList<>(List.of(executable().toString(),
        "--port", Integer.toString(port), "--bind", "127.0.0.1", "--dir", dir.toString(),
        "--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", ""));
    command.addAll(settings);
    try {
      process = new ProcessBuilder(command)
          .redirectErrorStream(true)
          .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("redis.log").toFile()))
          .start();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (!"+PONG".equals(command("PING"))) {
      if (!process.isAlive() || System.nanoTime() > deadline) {
        kill();
        throw new IllegalStateException("redis-server did not start on port " + port + "; its log: " + dir.resolve("redis.log"));
      }
      Await.sleep(20);
    }
  }

  /** Stops the server (a test takes Redis away); {@link #restart()} brings it back. */
  public synchronized void stop() {
    kill();
  }

  /**
   * Stops the server's process without ending it (SIGSTOP): it reads nothing more, but its kernel still acknowledges
   * what fits into its sockets' buffers. {@link #thaw()} lets it go on.
   */
  public synchronized void freeze() {
    signal("-STOP");
  }

  public synchronized void thaw() {
    signal("-CONT");
  }

  private void signal(String signal) {
    if (!isRunning()) {
      return;
    }
    try {
      Process kill = new ProcessBuilder("kill", signal, Long.toString(process.pid())).inheritIO().start();
      if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
        throw new IllegalStateException("kill " + signal + " " + process.pid() + " failed");
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public synchronized void close() {
    stopForGood();
    try {
      Runtime.getRuntime().removeShutdownHook(shutdownHook);
    } catch (IllegalStateException shuttingDown) {
      // the hook runs anyway
    }
  }

  /** Sends one inline command and returns the first line of the answer, or null when the server is not there. */
  public String command(String line) {
    try (Socket socket = new Socket()) {
      socket.connect(new InetSocketAddress("127.0.0.1", port), 1000);
      socket.setSoTimeout(5000);
      OutputStream out = socket.getOutputStream();
      out.write((line + "\r\n").getBytes(StandardCharsets.UTF_8));
      out.flush();
      BufferedReader in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
      String first = in.readLine();
      if (first != null && first.startsWith("$") && !first.equals("$-1")) {
        return in.readLine();
      }
      return first;
    } catch (IOException e) {
      return null;
    }
  }

  private synchronized void stopForGood() {
    kill();
    if (temporary) {
      TempFolders.delete(dir);
    }
  }

  private synchronized void kill() {
    if (process == null) {
      return;
    }
    try {
      signal("-CONT"); // SIGTERM stays pending on a process that freeze() stopped
    } catch (RuntimeException e) {
      process.destroyForcibly();
    }
    process.destroy();
    try {
      if (!process.waitFor(10, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    process = null;
  }

  /** The embedded-redis binary if it runs here, else Debian's redis-server, installed if missing. */
  private static synchronized Path executable() {
    if (executable != null) {
      return executable;
    }
    try {
      Path embedded = ExecutableProvider.newJarResourceProvider().get().toPath();
      if (runs(embedded)) {
        return executable = embedded;
      }
    } catch (IOException | RuntimeException e) {
      // no binary for this machine in the artifact: Debian's then
    }
    if (!Files.isExecutable(DEBIAN_REDIS)) {
      Apt.install("redis-server");
    }
    if (!runs(DEBIAN_REDIS)) {
      throw new IllegalStateException("the Redis tests need a redis-server: neither the embedded-redis binary nor "
          + DEBIAN_REDIS + " runs here (as root: apt-get update && apt-get install -y redis-server)");
    }
    return executable = DEBIAN_REDIS;
  }

  private static boolean runs(Path binary) {
    try {
      Process version = new ProcessBuilder(binary.toString(), "--version").redirectErrorStream(true).start();
      version.getInputStream().readAllBytes();
      return version.waitFor(30, TimeUnit.SECONDS) && version.exitValue() == 0;
    } catch (IOException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }


}
