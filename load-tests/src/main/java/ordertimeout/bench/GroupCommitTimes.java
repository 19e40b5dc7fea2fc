package ordertimeout.bench;

import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.distribution.CountAtBucket;
import io.micrometer.core.instrument.distribution.HistogramSnapshot;
import io.vertx.core.json.JsonObject;
import ordertimeout.metrics.NodeStats;

import java.util.Arrays;
import java.util.concurrent.TimeUnit;

/**
 * The node's group commits over a window, from its own timers ({@link NodeStats#groupTimers}): how long creates and
 * pays waited for their group on average, how many longer than 20, 50 and 100 ms, and the same of the groups'
 * transactions. A slow request whose wait was long queued behind a slow group: one runs at a time
 * (intake.groupsInFlight).
 */
final class GroupCommitTimes {
  private static final long[] OVER_MILLIS = {20, 50, 100};
  private static final String[] KINDS = {"create", "pay"};

  private final NodeStats stats;
  private final JsonObject start;

  private GroupCommitTimes(NodeStats stats) {
    this.stats = stats;
    this.start = counts();
  }

  static GroupCommitTimes start(NodeStats stats) {
    return new GroupCommitTimes(stats);
  }

  /**
   * The window's counts, by kind: {@code wait} and {@code transaction}, each {@code count}, {@code totalMicros} and
   * {@code over<N>ms}.
   */
  JsonObject stop() {
    JsonObject end = counts();
    JsonObject window = new JsonObject();
    for (String kind : KINDS) {
      JsonObject byTimer = new JsonObject();
      for (String timer : new String[] {"wait", "transaction"}) {
        JsonObject from = start.getJsonObject(kind).getJsonObject(timer);
        JsonObject to = end.getJsonObject(kind).getJsonObject(timer);
        JsonObject difference = new JsonObject();
        to.fieldNames().forEach(field -> difference.put(field, to.getLong(field) - from.getLong(field)));
        byTimer.put(timer, difference);
      }
      window.put(kind, byTimer);
    }
    return window;
  }

  static void print(String label, JsonObject window) {
    for (String kind : KINDS) {
      JsonObject wait = window.getJsonObject(kind).getJsonObject("wait");
      JsonObject transaction = window.getJsonObject(kind).getJsonObject("transaction");
      System.out.printf("%s: %ss at the group commit: %d waited for their group, %.1f ms on average, over "
              + "20/50/100 ms %d/%d/%d; %d groups' transactions, %.1f ms on average, over 20/50/100 ms %d/%d/%d%n",
          label, kind, wait.getLong("count"), mean(wait), wait.getLong("over20ms"), wait.getLong("over50ms"),
          wait.getLong("over100ms"), transaction.getLong("count"), mean(transaction), transaction.getLong("over20ms"),
          transaction.getLong("over50ms"), transaction.getLong("over100ms"));
    }
  }

  private static double mean(JsonObject counts) {
    return counts.getLong("count") == 0 ? 0 : counts.getLong("totalMicros") / 1000.0 / counts.getLong("count");
  }

  private JsonObject counts() {
    JsonObject byKind = new JsonObject();
    for (String kind : KINDS) {
      NodeStats.GroupTimers timers = stats.groupTimers(kind);
      byKind.put(kind, new JsonObject().put("wait", counts(timers.waitForGroup()))
          .put("transaction", counts(timers.transaction())));
    }
    return byKind;
  }

  /** The timer's count, and how many took longer than each of {@link #OVER_MILLIS} (its buckets are cumulative). */
  private static JsonObject counts(Timer timer) {
    HistogramSnapshot snapshot = timer.takeSnapshot();
    JsonObject counts = new JsonObject().put("count", snapshot.count())
        .put("totalMicros", (long) snapshot.total(TimeUnit.MICROSECONDS));
    for (long over : OVER_MILLIS) {
      CountAtBucket atMost = Arrays.stream(snapshot.histogramCounts())
          .filter(bucket -> bucket.bucket(TimeUnit.MILLISECONDS) == over).findFirst()
          .orElseThrow(() -> new IllegalStateException(timer.getId() + " has no bucket at " + over + " ms"));
      counts.put("over" + over + "ms", snapshot.count() - (long) atMost.count());
    }
    return counts;
  }
}
