package ordertimeout.bench;

import io.vertx.core.json.JsonObject;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;

/** What every benchmark shares: the head of its JSON result, where the result goes, and small helpers. */
final class Results {
  private Results() {}

  /** {"benchmark", "date", "machine"}: the figures mean something only next to the day and the machine. */
  static JsonObject header(String benchmark) {
    return new JsonObject()
        .put("benchmark", benchmark)
        .put("date", LocalDate.now().toString())
        .put("machine", Runtime.getRuntime().availableProcessors() + " cores, " + System.getProperty("os.arch")
            + ", Java " + System.getProperty("java.version"));
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
