package ordertimeout.bench;

import io.vertx.core.json.JsonObject;
import ordertimeout.config.AppConfig;
import ordertimeout.config.ConfigSource;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** What every benchmark shares: the head of its JSON result, where the result goes, and small helpers. */
final class Results {
  private Results() {}

  /**
   * {"benchmark", "date", "machine", "commit"}: the figures mean something only next to the day, the machine and the code
   * ("commit": git's short hash of HEAD, with "+changes" when the work tree differs from it; left out where git is not
   * at hand).
   */
  static JsonObject header(String benchmark) {
    JsonObject header = new JsonObject()
        .put("benchmark", benchmark)
        .put("date", LocalDate.now().toString())
        .put("machine", Runtime.getRuntime().availableProcessors() + " cores, " + System.getProperty("os.arch")
            + ", Java " + System.getProperty("java.version"));
    String commit = git("rev-parse", "--short", "HEAD");
    if (commit != null && !commit.isEmpty()) {
      String changes = git("status", "--porcelain", "--untracked-files=no");
      header.put("commit", commit + (changes == null || changes.isEmpty() ? "" : "+changes"));
    }
    return header;
  }

  /** git's output, trimmed; null when it could not run or failed. */
  private static String git(String... args) {
    try {
      String[] command = new String[args.length + 1];
      command[0] = "git";
      System.arraycopy(args, 0, command, 1, args.length);
      Process git = new ProcessBuilder(command).redirectErrorStream(true).start();
      String out = new String(git.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
      return git.waitFor(10, TimeUnit.SECONDS) && git.exitValue() == 0 ? out : null;
    } catch (IOException e) {
      return null;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return null;
    }
  }

  /** Writes load-tests/results/{benchmark}.json. */
  static void write(String benchmark, JsonObject result) {
    Path out = Path.of("load-tests", "results", benchmark + ".json");
    try {
      Files.createDirectories(out.getParent());
      Files.writeString(out, result.encodePrettily());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * OT_CLIENTS_OVERRIDES for a benchmark that drives the service as fast as it goes with dev-user-key: no create rate
   * and caps it cannot reach (they are still counted and checked, as in production).
   */
  static final String UNCAPPED_DEV_USER =
      "{dev-user: {createsPerSecond: 0, maxUnpaidOrders: 1000000000, maxReservedUnits: 1000000000000, maxTimeoutSeconds: 604800}}";

  /**
   * The service's configuration for a benchmark: conf/application.yaml, then any OT_* variable of this process,
   * so that a setting can be tried from the command line (e.g. {@code OT_INTAKE_GROUPS_IN_FLIGHT=1}), then the
   * benchmark's own settings (its port), which win.
   */
  static AppConfig serviceConfig(Map<String, String> benchmarkSettings) {
    return AppConfig.from(ConfigSource.load(Path.of("conf/application.yaml"),
        name -> benchmarkSettings.containsKey(name) ? benchmarkSettings.get(name) : System.getenv(name)));
  }

  static double round(double value) {
    return Math.round(value * 100) / 100.0;
  }

  static int freePort() {
    try (ServerSocket socket = new ServerSocket(0)) {
      return socket.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
