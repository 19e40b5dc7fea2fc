package ordertimeout.bench;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.HdrHistogram.Histogram;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Per-second series of a measured window, for the report's charts ({@link BenchReport}): counts (requests sent,
 * answered) and latency p50/p99 per named series, second 0 being the window's start. Not thread-safe: one thread
 * records (the open-model generator's event loop), or the caller synchronizes.
 *
 * <p>In the JSON: {@code {"axis", "fromEpochMillis", "seconds", "counts": {name: [n, ...]}, "p50Ms": {name: [ms or null, ...]},
 * "p99Ms": {...}}}, every array {@code seconds} long; a second without a latency sample has null there.
 * Events before the start are dropped; those more than {@code maxSeconds} after it go into the last second.
 */
final class PerSecond {
  private static final long HIGHEST_MICROS = TimeUnit.MINUTES.toMicros(10);

  private final long originNanos;
  private final long originEpochMillis;
  private final int maxSeconds;
  private final String axis;
  private final Map<String, long[]> counts = new LinkedHashMap<>();
  private final Map<String, List<Histogram>> latencies = new LinkedHashMap<>();
  private int seconds;

  /**
   * {@code originNanos}: the window's start on {@link System#nanoTime()}'s clock; {@code axis}: what second n is, for the
   * report's chart (e.g. "second of the measured schedule").
   */
  PerSecond(long originNanos, int maxSeconds, String axis) {
    this.axis = axis;
    this.originNanos = originNanos;
    this.originEpochMillis = System.currentTimeMillis() - TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - originNanos);
    this.maxSeconds = maxSeconds;
  }

  /** Declares a series up front, so that it is in the JSON (as zeros) even when nothing was recorded. */
  PerSecond counts(String... names) {
    for (String name : names) {
      counts.computeIfAbsent(name, n -> new long[maxSeconds]);
    }
    return this;
  }

  void count(String name, long atNanos) {
    int second = second(atNanos);
    if (second >= 0) {
      counts.computeIfAbsent(name, n -> new long[maxSeconds])[second]++;
    }
  }

  /** A latency sample, put in the second of {@code atNanos} (for a request: the second it was due). */
  void latency(String name, long atNanos, long micros) {
    int second = second(atNanos);
    if (second < 0) {
      return;
    }
    List<Histogram> perSecond = latencies.computeIfAbsent(name, n -> new ArrayList<>());
    while (perSecond.size() <= second) {
      perSecond.add(null);
    }
    Histogram histogram = perSecond.get(second);
    if (histogram == null) {
      histogram = new Histogram(HIGHEST_MICROS, 2);
      perSecond.set(second, histogram);
    }
    histogram.recordValue(Math.max(0, Math.min(HIGHEST_MICROS, micros)));
  }

  private int second(long atNanos) {
    long elapsed = atNanos - originNanos;
    if (elapsed < 0) {
      return -1;
    }
    int second = (int) Math.min(maxSeconds - 1, elapsed / 1_000_000_000L);
    seconds = Math.max(seconds, second + 1);
    return second;
  }

  JsonObject toJson() {
    JsonObject countsJson = new JsonObject();
    counts.forEach((name, values) -> {
      JsonArray array = new JsonArray();
      for (int i = 0; i < seconds; i++) {
        array.add(values[i]);
      }
      countsJson.put(name, array);
    });
    JsonObject p50 = new JsonObject();
    JsonObject p99 = new JsonObject();
    latencies.forEach((name, perSecond) -> {
      JsonArray p50s = new JsonArray();
      JsonArray p99s = new JsonArray();
      for (int i = 0; i < seconds; i++) {
        Histogram h = i < perSecond.size() ? perSecond.get(i) : null;
        p50s.add(h == null ? null : OpenLoad.Result.ms(h.getValueAtPercentile(50)));
        p99s.add(h == null ? null : OpenLoad.Result.ms(h.getValueAtPercentile(99)));
      }
      p50.put(name, p50s);
      p99.put(name, p99s);
    });
    return new JsonObject().put("axis", axis).put("fromEpochMillis", originEpochMillis).put("seconds", seconds)
        .put("counts", countsJson).put("p50Ms", p50).put("p99Ms", p99);
  }
}
