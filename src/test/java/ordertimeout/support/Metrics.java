package ordertimeout.support;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** One sample of a node's GET /metrics text, looked up by its name and labels as written there. */
public final class Metrics {
  private Metrics() {}

  /** The value of {@code series}, e.g. {@code ordertimeout_redis_up} or {@code ordertimeout_redis_fallbacks_total{operation="creates"}}. */
  public static double value(Api api, String series) {
    String text = api.get("/metrics", null).body();
    Matcher sample = Pattern.compile("(?m)^" + Pattern.quote(series) + " (\\S+)$").matcher(text);
    if (!sample.find()) {
      throw new AssertionError("no sample " + series + " in /metrics");
    }
    return Double.parseDouble(sample.group(1));
  }
}
