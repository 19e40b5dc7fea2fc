package ordertimeout.support;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The samples of a Prometheus text scrape, to look values up by name and labels. */
public final class Prometheus {
  private static final Pattern SAMPLE = Pattern.compile("([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\\{(.*)})? (\\S+)");
  private static final Pattern LABEL = Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)=\"((?:[^\"\\\\]|\\\\.)*)\"");

  public record Sample(String name, Map<String, String> labels, double value) {}

  private final List<Sample> samples = new ArrayList<>();
  private final String text;

  public Prometheus(String text) {
    this.text = text;
    for (String line : text.split("\n")) {
      if (line.isBlank() || line.startsWith("#")) {
        continue;
      }
      Matcher sample = SAMPLE.matcher(line.trim());
      if (!sample.matches()) {
        throw new IllegalArgumentException("not a sample line: " + line);
      }
      Map<String, String> labels = new LinkedHashMap<>();
      if (sample.group(2) != null) {
        Matcher label = LABEL.matcher(sample.group(2));
        while (label.find()) {
          labels.put(label.group(1), label.group(2));
        }
      }
      samples.add(new Sample(sample.group(1), labels, Double.parseDouble(sample.group(3))));
    }
  }

  public String text() {
    return text;
  }

  /** The samples of {@code name} whose labels include {@code labels} (given as name, value, name, value...). */
  public List<Sample> samples(String name, String... labels) {
    List<Sample> found = new ArrayList<>();
    for (Sample sample : samples) {
      if (sample.name().equals(name) && hasLabels(sample, labels)) {
        found.add(sample);
      }
    }
    return found;
  }

  public boolean has(String name, String... labels) {
    return !samples(name, labels).isEmpty();
  }

  /** The sum of the matching samples (0 when none). */
  public double sum(String name, String... labels) {
    return samples(name, labels).stream().mapToDouble(Sample::value).sum();
  }

  private static boolean hasLabels(Sample sample, String... labels) {
    for (int i = 0; i < labels.length; i += 2) {
      if (!labels[i + 1].equals(sample.labels().get(labels[i]))) {
        return false;
      }
    }
    return true;
  }
}
