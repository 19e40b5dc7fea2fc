package ordertimeout.support;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Values of a node's GET /metrics text that must be there: a meter that is missing (renamed, never registered) fails
 * the lookup instead of reading as 0, which would pass checks like {@code >= 0} or {@code isZero()}.
 */
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

  /**
   * The sum of the samples of {@code name} whose labels include {@code labels} (name, value, name, value...) in
   * {@code scrape}, failing when there is none.
   */
  public static double sum(Prometheus scrape, String name, String... labels) {
    if (!scrape.has(name, labels)) {
      StringBuilder series = new StringBuilder(name);
      for (int i = 0; i < labels.length; i += 2) {
        series.append(i == 0 ? "{" : ",").append(labels[i]).append("=\"").append(labels[i + 1]).append('"');
      }
      throw new AssertionError("no sample " + series + (labels.length > 0 ? "}" : "") + " in /metrics");
    }
    return scrape.sum(name, labels);
  }
}
