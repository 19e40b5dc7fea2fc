package ordertimeout.bench;

import io.vertx.core.json.JsonObject;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * wrk, run as a child process from the repository root (2 threads, {@code --latency}): a closed loop of
 * {@code connections}, each sending its next request when the last was answered. Its rate is what the machine gives
 * with wrk on it; its latencies hide stalls (a stalled connection sends nothing), so they are not a latency goal's
 * measure.
 */
final class Wrk {
  private static final Pattern RATE = Pattern.compile("Requests/sec:\\s+([0-9.]+)");
  private static final Pattern P99 = Pattern.compile("99%\\s+([0-9.]+)(us|ms|s)");
  private static final Pattern NON_2XX = Pattern.compile("Non-2xx or 3xx responses: (\\d+)");
  private static final Pattern SOCKET_ERRORS =
      Pattern.compile("Socket errors: connect (\\d+), read (\\d+), write (\\d+), timeout (\\d+)");

  /** What one run printed, and of it: requests a second, p99 in ms, answers other than 2xx, socket errors. */
  record Run(String output, double perSecond, double p99Ms, long non2xx, long socketErrors) {
    long errors() {
      return non2xx + socketErrors;
    }

    JsonObject toJson() {
      return new JsonObject().put("perSecond", Results.round(perSecond)).put("p99Ms", Results.round(p99Ms))
          .put("errors", errors());
    }
  }

  private Wrk() {}

  /** {@code script}: a file under load-tests/wrk; {@code environment}: the script's WRK_* settings. */
  static Run run(String url, String script, int connections, int seconds, Map<String, String> environment)
      throws IOException, InterruptedException {
    ProcessBuilder builder = new ProcessBuilder("wrk", "-t2", "-c" + connections, "-d" + seconds + "s", "--latency",
        "-s", "load-tests/wrk/" + script, url).redirectErrorStream(true);
    builder.environment().putAll(environment);
    Process process = builder.start();
    String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    process.waitFor();
    Matcher rate = RATE.matcher(output);
    Matcher p99 = P99.matcher(output);
    if (!rate.find() || !p99.find()) {
      throw new IllegalStateException("cannot read wrk's output:\n" + output);
    }
    double p99Ms = Double.parseDouble(p99.group(1)) * switch (p99.group(2)) {
      case "us" -> 0.001;
      case "s" -> 1000;
      default -> 1;
    };
    Matcher non2xx = NON_2XX.matcher(output);
    long answers = non2xx.find() ? Long.parseLong(non2xx.group(1)) : 0;
    long socketErrors = 0;
    Matcher socket = SOCKET_ERRORS.matcher(output);
    if (socket.find()) {
      for (int g = 1; g <= 4; g++) {
        socketErrors += Long.parseLong(socket.group(g));
      }
    }
    return new Run(output, Double.parseDouble(rate.group(1)), p99Ms, answers, socketErrors);
  }
}
