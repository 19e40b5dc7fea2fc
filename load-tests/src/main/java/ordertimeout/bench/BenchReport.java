package ordertimeout.bench;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * One HTML page of every benchmark's latest result: reads {@code load-tests/results/*.json} and writes
 * {@code load-tests/results/report.html}, one section per benchmark with its summary figures (date, commit, rate,
 * latency p50/p99/max per request type, the CPU split), its per-second series as line charts (throughput and
 * latency over time), its lateness histogram, its rates and durations per variant as bars, and the CPU split as a
 * stacked bar. Self-contained: inline CSS and SVG drawn here, no script, no font, nothing fetched, so that it opens
 * from the file on a machine without a network. A key an older JSON does not have is left out, never an error; a
 * file that is not JSON gets a section saying so.
 *
 * <p>Arguments: the results folder (load-tests/results), the output file (that folder's report.html).
 * {@code run-all.sh} runs it at the end.
 */
public final class BenchReport {
  /** The benchmarks in the order run-all.sh runs them, then the others; any other file comes after, by name. */
  private static final List<String> ORDER = List.of("wheel", "reload", "close-storm", "steady-state", "intake",
      "mix-wrk", "operator", "webhook", "redis-expiry", "items-foreign-key");
  /** Header keys, shown apart; subtrees not walked for figures (statement texts, settings, targets, series). */
  private static final Set<String> HEADER = Set.of("benchmark", "date", "machine", "commit");
  private static final Set<String> NOT_FIGURES = Set.of("postgresStatements", "config", "filter", "targets", "firstPagePlan",
      "measures", "how", "data", "jmh", "query", "firstRunNote", "createErrorsByKind", "payErrorsByKind");
  /** Numeric keys that are rates (per second), charted as bars per variant. */
  private static final Set<String> RATE_KEYS = Set.of("perSecond", "closesPerSecond", "createsPerSecond",
      "opsPerSecond", "heldPerSecond", "meanPerSecond", "medianWith", "medianWithout");
  /** Numeric keys that are durations in ms, charted as bars per variant. */
  private static final Set<String> DURATION_KEYS = Set.of("medianMillis", "medianMillisPerInvocation", "firstRunMillis");
  private static final Pattern PERCENTILE = Pattern.compile("^(.*?)(P50|P99|P999|Max|p50|p99|p999|max)(Ms|Millis)$");
  private static final String[] COLORS = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
      "#17becf", "#7f7f7f", "#bcbd22"};

  private BenchReport() {}

  public static void main(String[] args) throws IOException {
    Path folder = Path.of(args.length > 0 ? args[0] : "load-tests/results");
    Path out = args.length > 1 ? Path.of(args[1]) : folder.resolve("report.html");
    int sections = write(folder, out);
    System.out.println("report: " + sections + " benchmarks in " + out.toAbsolutePath().normalize());
  }

  /** Writes the report of every *.json in {@code folder} to {@code out}; answers how many sections it has. */
  static int write(Path folder, Path out) throws IOException {
    List<Path> files = new ArrayList<>();
    if (Files.isDirectory(folder)) {
      try (Stream<Path> listing = Files.list(folder)) {
        listing.filter(p -> p.getFileName().toString().endsWith(".json")).forEach(files::add);
      }
    }
    Map<String, JsonObject> results = new LinkedHashMap<>();
    for (Path file : files) {
      String name = file.getFileName().toString().replaceFirst("\\.json$", "");
      try {
        results.put(name, new JsonObject(Files.readString(file, StandardCharsets.UTF_8)));
      } catch (RuntimeException | IOException e) {
        results.put(name, new JsonObject().put("benchmark", name).put("unreadable", String.valueOf(e.getMessage())));
      }
    }
    String html = render(results);
    if (out.getParent() != null) {
      Files.createDirectories(out.getParent());
    }
    Files.writeString(out, html, StandardCharsets.UTF_8);
    return results.size();
  }

  /** The page: one section per entry (file name without .json, its JSON). */
  static String render(Map<String, JsonObject> results) {
    List<String> names = new ArrayList<>(results.keySet());
    names.sort((a, b) -> {
      int ia = ORDER.indexOf(a) < 0 ? ORDER.size() : ORDER.indexOf(a);
      int ib = ORDER.indexOf(b) < 0 ? ORDER.size() : ORDER.indexOf(b);
      return ia != ib ? Integer.compare(ia, ib) : a.compareTo(b);
    });
    StringBuilder html = new StringBuilder();
    html.append("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>order-timeout benchmarks</title>\n")
        .append("<style>\n").append(CSS).append("</style>\n</head>\n<body>\n")
        .append("<h1>order-timeout benchmarks</h1>\n")
        .append("<p class=\"note\">Generated ").append(esc(Instant.now().truncatedTo(ChronoUnit.SECONDS).toString()))
        .append(" by <code>BenchReport</code> from ").append(results.size())
        .append(" result files in <code>load-tests/results/</code>. What each benchmark measures: <code>docs/benchmarks.md</code>.</p>\n");
    html.append("<nav><ul>\n");
    for (String name : names) {
      html.append("<li><a href=\"#").append(esc(anchor(name))).append("\">").append(esc(name)).append("</a> <span class=\"note\">")
          .append(esc(results.get(name).getValue("date") instanceof String date ? date : "")).append("</span></li>\n");
    }
    html.append("</ul></nav>\n");
    for (String name : names) {
      try {
        html.append(section(name, results.get(name)));
      } catch (RuntimeException e) {
        // a shape this class did not foresee: the other sections still get drawn
        html.append("<section class=\"benchmark\" id=\"").append(esc(anchor(name))).append("\">\n<h2>").append(esc(name))
            .append("</h2>\n<p class=\"warn\">Could not draw this result: ").append(esc(String.valueOf(e))).append("</p>\n")
            .append("<div class=\"charts\">").append(emptyChart("Nothing drawn")).append("</div>\n</section>\n");
      }
    }
    return html.append("</body>\n</html>\n").toString();
  }

  private static String section(String name, JsonObject result) {
    StringBuilder html = new StringBuilder();
    html.append("<section class=\"benchmark\" id=\"").append(esc(anchor(name))).append("\">\n<h2>").append(esc(name)).append("</h2>\n");
    int charts = 0;
    if (result.containsKey("unreadable")) {
      html.append("<p class=\"warn\">Not readable as JSON: ").append(esc(result.getString("unreadable"))).append("</p>\n");
    } else {
      html.append(summary(result));
      html.append(latencyTable(result));
      JsonObject cpu = result.getValue("cpu") instanceof JsonObject c ? c : null;
      if (cpu != null) {
        html.append(cpuTable(cpu));
      }
      html.append("<div class=\"charts\">\n");
      for (Map.Entry<String, JsonObject> series : find(result, "", BenchReport::isPerSecond).entrySet()) {
        String chart = throughputChart(series.getKey(), series.getValue());
        if (!chart.isEmpty()) {
          html.append(chart);
          charts++;
        }
        chart = latencyOverTimeChart(series.getKey(), series.getValue());
        if (!chart.isEmpty()) {
          html.append(chart);
          charts++;
        }
      }
      for (Map.Entry<String, JsonObject> histogram : find(result, "", BenchReport::isHistogram).entrySet()) {
        html.append(histogramChart(histogram.getKey(), histogram.getValue()));
        charts++;
      }
      List<Bar> rates = bars(result, RATE_KEYS);
      if (!rates.isEmpty()) {
        html.append(barChart("Rates per variant (per second)", rates));
        charts++;
      }
      List<Bar> durations = bars(result, DURATION_KEYS);
      if (!durations.isEmpty()) {
        html.append(barChart("Durations per variant (ms)", durations));
        charts++;
      }
      boolean latencyOverTime = find(result, "", BenchReport::isPerSecond).values().stream()
          .anyMatch(series -> series.getValue("p99Ms") instanceof JsonObject p99 && !p99.isEmpty());
      List<Latency> latencies = latencyOverTime ? List.of() : latencyBars(result);
      if (!latencies.isEmpty()) {
        html.append(latencyChart(latencies));
        charts++;
      }
      if (cpu != null) {
        html.append(cpuChart(cpu));
        charts++;
      }
      html.append("</div>\n");
      html.append(allFigures(result));
    }
    if (charts == 0) {
      html.append("<div class=\"charts\">").append(emptyChart("Nothing to chart in this result")).append("</div>\n");
    }
    return html.append("</section>\n").toString();
  }

  // ---- summary tables

  private static String summary(JsonObject result) {
    StringBuilder html = new StringBuilder("<table class=\"summary\">\n");
    row(html, "date", result.getValue("date"));
    row(html, "commit", result.getValue("commit") == null ? "not recorded" : result.getValue("commit"));
    row(html, "machine", result.getValue("machine"));
    for (String key : List.of("ratePerSecond", "eventsPerSecond", "seconds", "warmupSeconds", "load", "orders", "keys",
        "timersPerInvocation", "rounds", "batchSize", "runs", "queriesPerFilter", "planned")) {
      Object value = result.getValue(key);
      if (value != null && !(value instanceof JsonObject) && !(value instanceof JsonArray)) {
        row(html, label(key), value);
      }
    }
    return html.append("</table>\n").toString();
  }

  private static void row(StringBuilder html, String key, Object value) {
    if (value != null) {
      html.append("<tr><th>").append(esc(key)).append("</th><td>").append(esc(format(value))).append("</td></tr>\n");
    }
  }

  /** A latency row: what (path), p50, p99, p99.9, max, count; any of them may be missing. */
  private record Latency(String what, Double p50, Double p99, Double p999, Double max, Long count) {}

  /**
   * Every latency figure: objects with p50 and p99 (OpenLoad's createLatencyMs, payLatencyMs...) and keys
   * {@code <what>P50Ms}, {@code <what>P99Ms}, {@code <what>MaxMs} (lateness, lag, a search's first page...).
   */
  private static List<Latency> latencies(JsonObject result) {
    List<Latency> rows = new ArrayList<>();
    walk(result, "", (path, object) -> {
      if (object.getValue("p50") instanceof Number && object.getValue("p99") instanceof Number) {
        rows.add(new Latency(path.isEmpty() ? "latency" : path.replaceAll("(Latency)?(Ms|Millis)$", ""), number(object, "p50"), number(object, "p99"),
            number(object, "p999"), number(object, "max"), object.getValue("count") instanceof Number n ? n.longValue() : null));
      }
      Map<String, Map<String, Double>> byPrefix = new LinkedHashMap<>();
      for (String key : object.fieldNames()) {
        Matcher m = PERCENTILE.matcher(key);
        if (m.matches() && object.getValue(key) instanceof Number n) {
          byPrefix.computeIfAbsent(m.group(1), k -> new LinkedHashMap<>()).put(m.group(2).toLowerCase(Locale.ROOT), n.doubleValue());
        }
      }
      byPrefix.forEach((prefix, values) -> {
        String what = join(path, prefix.isEmpty() ? "" : prefix);
        rows.add(new Latency(what.isEmpty() ? "latency" : what, values.get("p50"), values.get("p99"), values.get("p999"),
            values.get("max"), null));
      });
    });
    return rows;
  }

  private static String latencyTable(JsonObject result) {
    List<Latency> rows = latencies(result);
    if (rows.isEmpty()) {
      return "";
    }
    StringBuilder html = new StringBuilder("<table class=\"figures\">\n<tr><th>latency (ms)</th><th>p50</th><th>p99</th>"
        + "<th>p99.9</th><th>max</th><th>count</th></tr>\n");
    for (Latency row : rows) {
      html.append("<tr><td>").append(esc(row.what())).append("</td>");
      for (Object value : new Object[] {row.p50(), row.p99(), row.p999(), row.max(), row.count()}) {
        html.append("<td>").append(value == null ? "" : esc(format(value))).append("</td>");
      }
      html.append("</tr>\n");
    }
    return html.append("</table>\n").toString();
  }

  /**
   * The CPU split in cores: service JVM (without the generator and the JIT compilers), PostgreSQL, generator, JIT
   * compilers (0 in results from before they were measured: the service's part then holds them), other processes, idle.
   * A node that ran in a JVM of its own ({@code nodeJvm}) is the service's part, out of the other processes; the
   * benchmark's JVM is then the generator's, its compilers apart.
   */
  static List<Bar> cpuParts(JsonObject cpu) {
    double jvm = orZero(cpu, "jvmCores");
    double generator = orZero(cpu, "generatorCores");
    double compilers = orZero(cpu, "jitCompilerCores");
    JsonObject nodeJvm = cpu.getJsonObject("nodeJvm");
    double service = nodeJvm == null ? Math.max(0, jvm - generator - compilers) : orZero(nodeJvm, "cores");
    double others = orZero(cpu, "otherProcessesCores") - (nodeJvm == null ? 0 : service);
    List<Bar> parts = new ArrayList<>();
    parts.add(new Bar("service JVM", service, COLORS[0]));
    parts.add(new Bar("PostgreSQL", orZero(cpu, "postgresCores"), COLORS[1]));
    parts.add(new Bar("generator", nodeJvm == null ? generator : Math.max(0, jvm - compilers), COLORS[3]));
    parts.add(new Bar("JIT compilers", compilers, COLORS[5]));
    parts.add(new Bar("other processes", Math.max(0, others), COLORS[8]));
    parts.add(new Bar("idle", orZero(cpu, "idleCores"), "#dddddd"));
    return parts;
  }

  private static String cpuTable(JsonObject cpu) {
    StringBuilder html = new StringBuilder("<table class=\"figures\">\n<tr><th>CPU (cores)</th>");
    List<Bar> parts = cpuParts(cpu);
    for (Bar part : parts) {
      html.append("<th>").append(esc(part.label())).append("</th>");
    }
    html.append("<th>GC</th></tr>\n<tr><td>over ").append(esc(format(cpu.getValue("seconds")))).append(" s</td>");
    for (Bar part : parts) {
      html.append("<td>").append(esc(format(part.value()))).append("</td>");
    }
    // the service's collections: those of the node's own JVM when it ran in one
    JsonObject gc = cpu.getJsonObject("nodeJvm") != null
        ? new JsonObject().put("gcCount", cpu.getJsonObject("nodeJvm").getValue("gcPauses"))
            .put("gcMillis", cpu.getJsonObject("nodeJvm").getValue("gcPauseMillis"))
        : cpu;
    html.append("<td>").append(gc.containsKey("gcCount") ? esc(format(gc.getValue("gcCount")) + " pauses, "
        + format(gc.getValue("gcMillis")) + " ms") : "").append("</td></tr>\n");
    return html.append("</table>\n").toString();
  }

  /** Every scalar figure, by its path, folded away. */
  private static String allFigures(JsonObject result) {
    StringBuilder rows = new StringBuilder();
    walk(result, "", (path, object) -> {
      for (String key : object.fieldNames()) {
        Object value = object.getValue(key);
        if (!(value instanceof JsonObject) && !(value instanceof JsonArray) && !(path.isEmpty() && HEADER.contains(key))) {
          rows.append("<tr><td>").append(esc(join(path, key))).append("</td><td>").append(esc(format(value))).append("</td></tr>\n");
        }
      }
    });
    return rows.length() == 0 ? "" : "<details><summary>All figures</summary>\n<table class=\"figures\">\n" + rows + "</table>\n</details>\n";
  }

  // ---- finding things in the JSON

  private interface Visitor {
    void visit(String path, JsonObject object);
  }

  /** Every object (arrays of objects included, by index), depth first, except the subtrees that are not figures and the series. */
  private static void walk(JsonObject object, String path, Visitor visitor) {
    if (isPerSecond(object) || isHistogram(object)) {
      return;
    }
    visitor.visit(path, object);
    for (String key : object.fieldNames()) {
      if (NOT_FIGURES.contains(key)) {
        continue;
      }
      Object value = object.getValue(key);
      if (value instanceof JsonObject child) {
        walk(child, join(path, key), visitor);
      } else if (value instanceof JsonArray array) {
        for (int i = 0; i < array.size(); i++) {
          if (array.getValue(i) instanceof JsonObject child) {
            walk(child, join(path, key + " " + (i + 1)), visitor);
          }
        }
      }
    }
  }

  private static Map<String, JsonObject> find(JsonObject object, String path, java.util.function.Predicate<JsonObject> what) {
    Map<String, JsonObject> found = new LinkedHashMap<>();
    for (String key : object.fieldNames()) {
      if (NOT_FIGURES.contains(key)) {
        continue;
      }
      if (object.getValue(key) instanceof JsonObject child) {
        if (what.test(child)) {
          found.put(join(path, key), child);
        } else {
          found.putAll(find(child, join(path, key), what));
        }
      }
    }
    return found;
  }

  /** PerSecond's JSON: {"counts": {name: [..]}, "p50Ms": {...}, "p99Ms": {...}}. */
  private static boolean isPerSecond(JsonObject object) {
    return object.getValue("counts") instanceof JsonObject;
  }

  /** A lateness histogram: {"edgesMs": [..], "counts": [..]}, one count more than edges. */
  private static boolean isHistogram(JsonObject object) {
    return object.getValue("edgesMs") instanceof JsonArray edges && object.getValue("counts") instanceof JsonArray counts
        && !edges.isEmpty() && counts.size() == edges.size() + 1;
  }

  private static List<Bar> bars(JsonObject result, Set<String> keys) {
    List<Bar> bars = new ArrayList<>();
    walk(result, "", (path, object) -> {
      for (String key : object.fieldNames()) {
        if (keys.contains(key) && object.getValue(key) instanceof Number n) {
          String label = key.equals("perSecond") || key.equals("closesPerSecond") || key.equals("opsPerSecond")
              || key.equals("medianMillis") || key.equals("medianMillisPerInvocation") ? path : join(path, key);
          bars.add(new Bar(label.isEmpty() ? key : label, n.doubleValue(), COLORS[bars.size() % COLORS.length]));
        }
      }
    });
    return bars;
  }

  /** p50 and p99 of each latency row, for a result without a per-second latency chart to show them over time. */
  private static List<Latency> latencyBars(JsonObject result) {
    return latencies(result).stream().filter(row -> row.p50() != null || row.p99() != null).toList();
  }

  // ---- charts (inline SVG)

  record Bar(String label, double value, String color) {}

  private record Line(String name, List<Double> values, String color, boolean dashed) {}

  private static String throughputChart(String path, JsonObject series) {
    JsonObject counts = series.getJsonObject("counts");
    List<Line> lines = new ArrayList<>();
    for (String name : counts.fieldNames()) {
      if (counts.getValue(name) instanceof JsonArray values && values.stream().anyMatch(v -> v instanceof Number n && n.doubleValue() != 0)) {
        lines.add(new Line(name, doubles(values), COLORS[lines.size() % COLORS.length], false));
      }
    }
    return lines.isEmpty() ? "" : lineChart("Throughput over time (" + path + ")", "per second", axis(series), lines);
  }

  private static String latencyOverTimeChart(String path, JsonObject series) {
    List<Line> lines = new ArrayList<>();
    JsonObject p50 = series.getValue("p50Ms") instanceof JsonObject o ? o : new JsonObject();
    JsonObject p99 = series.getValue("p99Ms") instanceof JsonObject o ? o : new JsonObject();
    int color = 0;
    for (String name : p99.fieldNames()) {
      String c = COLORS[color++ % COLORS.length];
      if (p50.getValue(name) instanceof JsonArray values) {
        lines.add(new Line(name + " p50", doubles(values), c, true));
      }
      if (p99.getValue(name) instanceof JsonArray values) {
        lines.add(new Line(name + " p99", doubles(values), c, false));
      }
    }
    return lines.isEmpty() ? "" : lineChart("Latency p50 (dashed) and p99 over time (" + path + ")", "ms", axis(series), lines);
  }

  /** The x axis's meaning, as the series's JSON says it ("axis"), or plain seconds. */
  private static String axis(JsonObject series) {
    return series.getValue("axis") instanceof String axis ? axis : "second";
  }

  private static final int W = 760;
  private static final int H = 260;
  private static final int LEFT = 64;
  private static final int RIGHT = 170;
  private static final int TOP = 40;
  private static final int BOTTOM = 36;

  /** Lines over x = second 0, 1, ...; a null value breaks the line. */
  private static String lineChart(String title, String unit, String axis, List<Line> lines) {
    int n = lines.stream().mapToInt(l -> l.values().size()).max().orElse(0);
    double max = lines.stream().flatMap(l -> l.values().stream()).filter(v -> v != null).mapToDouble(Double::doubleValue).max().orElse(0);
    double top = niceCeiling(max);
    double plotW = W - LEFT - RIGHT;
    double plotH = H - TOP - BOTTOM;
    StringBuilder svg = svgOpen(title, W, H);
    // y grid
    for (int i = 0; i <= 4; i++) {
      double value = top * i / 4;
      double y = TOP + plotH - plotH * i / 4;
      svg.append(String.format(Locale.ROOT, "<line class=\"grid\" x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", LEFT, y, LEFT + plotW, y))
          .append(String.format(Locale.ROOT, "<text class=\"axis\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>", LEFT - 6, y + 4,
              esc(short_(value))));
    }
    // x ticks, in seconds
    int step = Math.max(1, niceStep(Math.max(1, n - 1) / 8.0));
    for (int s = 0; s < n; s += step) {
      double x = LEFT + (n <= 1 ? 0 : plotW * s / (n - 1));
      svg.append(String.format(Locale.ROOT, "<text class=\"axis\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%d</text>", x, H - BOTTOM + 16, s));
    }
    svg.append(String.format(Locale.ROOT, "<text class=\"axis\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>",
        LEFT + plotW / 2, H - 4, esc(axis)));
    int legendY = TOP;
    for (Line line : lines) {
      StringBuilder d = new StringBuilder();
      boolean pen = false;
      for (int i = 0; i < line.values().size(); i++) {
        Double v = line.values().get(i);
        if (v == null) {
          pen = false;
          continue;
        }
        double x = LEFT + (n <= 1 ? plotW / 2 : plotW * i / (n - 1));
        double y = TOP + plotH - (top == 0 ? 0 : plotH * v / top);
        d.append(pen ? " L" : " M").append(String.format(Locale.ROOT, "%.1f %.1f", x, y));
        pen = true;
      }
      if (d.length() > 0) {
        svg.append("<path fill=\"none\" stroke=\"").append(line.color()).append("\" stroke-width=\"1.6\"")
            .append(line.dashed() ? " stroke-dasharray=\"5 3\"" : "").append(" d=\"").append(d.toString().trim()).append("\"/>");
      }
      svg.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"%s/>",
              W - RIGHT + 10.0, legendY, W - RIGHT + 30.0, legendY, line.color(), line.dashed() ? " stroke-dasharray=\"5 3\"" : ""))
          .append(String.format(Locale.ROOT, "<text class=\"legend\" x=\"%d\" y=\"%d\">%s</text>", W - RIGHT + 36, legendY + 4,
              esc(line.name())));
      legendY += 18;
    }
    svg.append(String.format(Locale.ROOT, "<text class=\"axis\" x=\"%d\" y=\"%d\">%s</text>", 4, TOP - 8, esc(unit)));
    return svg.append("</svg></figure>\n").toString();
  }

  /** Columns per bucket: below 0 (early), [0, 1), ..., at or above the last edge. */
  private static String histogramChart(String path, JsonObject histogram) {
    JsonArray edges = histogram.getJsonArray("edgesMs");
    JsonArray counts = histogram.getJsonArray("counts");
    List<String> labels = new ArrayList<>();
    labels.add("<" + msLabel(num(edges.getValue(0))));
    for (int i = 1; i < edges.size(); i++) {
      labels.add(msLabel(num(edges.getValue(i - 1))) + "-" + msLabel(num(edges.getValue(i))));
    }
    labels.add(">=" + msLabel(num(edges.getValue(edges.size() - 1))));
    long total = 0;
    double max = 0;
    for (int i = 0; i < counts.size(); i++) {
      total += (long) num(counts.getValue(i));
      max = Math.max(max, num(counts.getValue(i)));
    }
    double top = niceCeiling(max);
    int width = W;
    double plotW = width - LEFT - 20;
    double plotH = H - TOP - BOTTOM - 10;
    double column = plotW / counts.size();
    StringBuilder svg = svgOpen("Lateness distribution, ms (" + path + ", " + total + " closes)", width, H);
    for (int i = 0; i <= 4; i++) {
      double y = TOP + plotH - plotH * i / 4;
      svg.append(String.format(Locale.ROOT, "<line class=\"grid\" x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", LEFT, y, LEFT + plotW, y))
          .append(String.format(Locale.ROOT, "<text class=\"axis\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>", LEFT - 6, y + 4,
              esc(short_(top * i / 4))));
    }
    for (int i = 0; i < counts.size(); i++) {
      double count = num(counts.getValue(i));
      double h = top == 0 ? 0 : plotH * count / top;
      double x = LEFT + column * i;
      String color = i == 0 ? COLORS[1] : COLORS[0];
      svg.append(String.format(Locale.ROOT, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>%s ms: %s</title></rect>",
              x + 2, TOP + plotH - h, column - 4, h, color, esc(labels.get(i)), esc(format(count))))
          .append(String.format(Locale.ROOT, "<text class=\"axis\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>",
              x + column / 2, TOP + plotH + 14, esc(labels.get(i))));
      if (count > 0) {
        svg.append(String.format(Locale.ROOT, "<text class=\"value\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>",
            x + column / 2, TOP + plotH - h - 3, esc(short_(count))));
      }
    }
    svg.append(String.format(Locale.ROOT, "<text class=\"axis\" x=\"%d\" y=\"%d\">closes</text>", 4, TOP - 8));
    return svg.append("</svg></figure>\n").toString();
  }

  /** Horizontal bars, one a row, with their value. */
  private static String barChart(String title, List<Bar> bars) {
    int labelW = 300;
    int rowH = 20;
    int height = TOP + bars.size() * rowH + 12;
    double plotW = W - labelW - 90;
    double max = bars.stream().mapToDouble(Bar::value).max().orElse(0);
    StringBuilder svg = svgOpen(title, W, height);
    int y = TOP;
    for (Bar bar : bars) {
      double w = max <= 0 ? 0 : Math.max(0, plotW * bar.value() / max);
      svg.append(String.format(Locale.ROOT, "<text class=\"axis\" x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>", labelW - 6, y + 14,
              esc(clip(bar.label(), 48))))
          .append(String.format(Locale.ROOT, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"><title>%s: %s</title></rect>",
              labelW, y + 3, w, rowH - 6, bar.color(), esc(bar.label()), esc(format(bar.value()))))
          .append(String.format(Locale.ROOT, "<text class=\"value\" x=\"%.1f\" y=\"%d\">%s</text>", labelW + w + 4, y + 14,
              esc(format(bar.value()))));
      y += rowH;
    }
    return svg.append("</svg></figure>\n").toString();
  }

  /** One row per latency: p99 (light) with p50 (dark) over it, on a log scale from 0.1 ms (figures from 1 ms to seconds). */
  private static String latencyChart(List<Latency> rows) {
    int labelW = 300;
    int rowH = 20;
    int height = TOP + rows.size() * rowH + 12;
    double plotW = W - labelW - 120;
    double floor = 0.1;
    double max = rows.stream().mapToDouble(r -> Math.max(r.p50() == null ? 0 : r.p50(), r.p99() == null ? 0 : r.p99())).max().orElse(1);
    double span = Math.log10(Math.max(max, 1)) - Math.log10(floor);
    StringBuilder svg = svgOpen("Latency p50 (dark) and p99 (light), ms, log scale", W, height);
    int y = TOP;
    for (Latency row : rows) {
      svg.append(String.format(Locale.ROOT, "<text class=\"axis\" x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>", labelW - 6, y + 14,
          esc(clip(row.what(), 48))));
      double end = labelW;
      if (row.p99() != null) {
        double w = row.p99() <= floor ? 0 : plotW * (Math.log10(row.p99()) - Math.log10(floor)) / span;
        svg.append(String.format(Locale.ROOT, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"#f2a5a5\"><title>%s p99: %s ms</title></rect>",
            labelW, y + 3, w, rowH - 6, esc(row.what()), esc(format(row.p99()))));
        end = Math.max(end, labelW + w);
      }
      if (row.p50() != null) {
        double w = row.p50() <= floor ? 0 : plotW * (Math.log10(row.p50()) - Math.log10(floor)) / span;
        svg.append(String.format(Locale.ROOT, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"><title>%s p50: %s ms</title></rect>",
            labelW, y + 6, w, rowH - 12, COLORS[0], esc(row.what()), esc(format(row.p50()))));
        end = Math.max(end, labelW + w);
      }
      svg.append(String.format(Locale.ROOT, "<text class=\"value\" x=\"%.1f\" y=\"%d\">%s / %s</text>", end + 4, y + 14,
          esc(row.p50() == null ? "-" : format(row.p50())), esc(row.p99() == null ? "-" : format(row.p99()))));
      y += rowH;
    }
    return svg.append("</svg></figure>\n").toString();
  }

  /** The CPU split as one stacked bar over the machine's cores. */
  private static String cpuChart(JsonObject cpu) {
    List<Bar> parts = cpuParts(cpu);
    double total = parts.stream().mapToDouble(Bar::value).sum();
    int height = 92;
    double plotW = W - LEFT - 20;
    StringBuilder svg = svgOpen("CPU split (cores, " + format(Results.round(total)) + " in all)", W, height);
    double x = LEFT;
    double legendX = LEFT;
    for (Bar part : parts) {
      double w = total == 0 ? 0 : plotW * part.value() / total;
      svg.append(String.format(Locale.ROOT, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"24\" fill=\"%s\"><title>%s: %s cores</title></rect>",
          x, TOP, w, part.color(), esc(part.label()), esc(format(part.value()))));
      x += w;
      svg.append(String.format(Locale.ROOT, "<rect x=\"%.1f\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"/>", legendX, TOP + 34, part.color()))
          .append(String.format(Locale.ROOT, "<text class=\"legend\" x=\"%.1f\" y=\"%d\">%s %s</text>", legendX + 14, TOP + 43,
              esc(part.label()), esc(format(part.value()))));
      legendX += 135;
    }
    return svg.append("</svg></figure>\n").toString();
  }

  private static String emptyChart(String text) {
    return svgOpen(text, W, 50) + "</svg></figure>\n";
  }

  private static StringBuilder svgOpen(String title, int width, int height) {
    return new StringBuilder("<figure><svg role=\"img\" width=\"").append(width).append("\" height=\"").append(height)
        .append("\" viewBox=\"0 0 ").append(width).append(' ').append(height).append("\"><title>").append(esc(title))
        .append("</title><text class=\"title\" x=\"4\" y=\"14\">").append(esc(title)).append("</text>");
  }

  // ---- small helpers

  /** The smallest 4 x step (step 1, 2, 2.5 or 5 times a power of ten) at or above {@code max}: four round grid lines. */
  private static double niceCeiling(double max) {
    if (max <= 0) {
      return 1;
    }
    double raw = max / 4;
    double magnitude = Math.pow(10, Math.floor(Math.log10(raw)));
    for (double factor : new double[] {1, 2, 2.5, 5, 10}) {
      if (factor * magnitude >= raw) {
        return 4 * factor * magnitude;
      }
    }
    return 40 * magnitude;
  }

  private static int niceStep(double raw) {
    for (int step : new int[] {1, 2, 5, 10, 15, 20, 30, 60, 120, 300, 600}) {
      if (step >= raw) {
        return step;
      }
    }
    return 600;
  }

  private static List<Double> doubles(JsonArray values) {
    List<Double> out = new ArrayList<>(values.size());
    for (Object v : values) {
      out.add(v instanceof Number n ? n.doubleValue() : null);
    }
    return out;
  }

  private static double num(Object value) {
    return value instanceof Number n ? n.doubleValue() : 0;
  }

  private static Double number(JsonObject object, String key) {
    return object.getValue(key) instanceof Number n ? n.doubleValue() : null;
  }

  private static double orZero(JsonObject object, String key) {
    return object.getValue(key) instanceof Number n ? n.doubleValue() : 0;
  }

  private static String join(String path, String key) {
    return path.isEmpty() ? key : key.isEmpty() ? path : path + " / " + key;
  }

  private static String anchor(String name) {
    return name.replaceAll("[^A-Za-z0-9_-]", "-");
  }

  /** camelCase key to words: "ratePerSecond" to "rate per second". */
  private static String label(String key) {
    return key.replaceAll("([a-z0-9])([A-Z])", "$1 $2").toLowerCase(Locale.ROOT);
  }

  private static String clip(String text, int max) {
    return text.length() <= max ? text : "..." + text.substring(text.length() - max + 3);
  }

  private static String format(Object value) {
    if (value instanceof Double || value instanceof Float) {
      double d = ((Number) value).doubleValue();
      if (d == Math.rint(d) && Math.abs(d) < 1e15) {
        return String.format(Locale.ROOT, "%,d", (long) d);
      }
      String text = Math.abs(d) >= 100 ? String.format(Locale.ROOT, "%,.1f", d) : String.format(Locale.ROOT, "%.2f", d);
      return text.contains(".") ? text.replaceAll("0+$", "").replaceAll("\\.$", "") : text;
    }
    if (value instanceof Long || value instanceof Integer) {
      return String.format(Locale.ROOT, "%,d", ((Number) value).longValue());
    }
    return String.valueOf(value);
  }

  /** 500 ms as 500, 2000 ms as 2s: the histogram's bucket labels. */
  private static String msLabel(double ms) {
    return ms >= 1000 ? trim(ms / 1000) + "s" : trim(ms);
  }

  /** 1234567 as 1.2M, 2500 as 2.5k: axis labels. */
  private static String short_(double value) {
    double abs = Math.abs(value);
    if (abs >= 1e6) {
      return trim(value / 1e6) + "M";
    }
    if (abs >= 1e3) {
      return trim(value / 1e3) + "k";
    }
    return trim(value);
  }

  private static String trim(double value) {
    String s = String.format(Locale.ROOT, "%.1f", value);
    return s.endsWith(".0") ? s.substring(0, s.length() - 2) : s;
  }

  static String esc(String text) {
    StringBuilder out = new StringBuilder(text.length());
    for (char c : text.toCharArray()) {
      switch (c) {
        case '<' -> out.append("&lt;");
        case '>' -> out.append("&gt;");
        case '&' -> out.append("&amp;");
        case '"' -> out.append("&quot;");
        case '\'' -> out.append("&#39;");
        default -> out.append(c);
      }
    }
    return out.toString();
  }

  private static final String CSS = """
      body { font-family: sans-serif; margin: 1.5em auto; max-width: 1100px; color: #222; padding: 0 1em; }
      h1 { font-size: 1.5em; }
      h2 { font-size: 1.25em; border-bottom: 1px solid #ccc; padding-bottom: .2em; margin-top: 2em; }
      nav ul { columns: 3; padding-left: 1.2em; }
      table { border-collapse: collapse; margin: .6em 0; font-size: .9em; }
      th, td { border: 1px solid #ddd; padding: .2em .6em; text-align: left; }
      table.figures td:not(:first-child) { text-align: right; font-variant-numeric: tabular-nums; }
      table.summary th { background: #f4f4f4; font-weight: normal; color: #555; }
      figure { margin: .8em 0; }
      svg { max-width: 100%; height: auto; font-family: sans-serif; }
      svg .title { font-size: 13px; font-weight: bold; fill: #222; }
      svg .axis { font-size: 10px; fill: #555; }
      svg .legend { font-size: 11px; fill: #222; }
      svg .value { font-size: 10px; fill: #222; }
      svg .grid { stroke: #e4e4e4; stroke-width: 1; }
      .note { color: #666; font-size: .9em; }
      .warn { color: #a00; }
      details { margin: .6em 0; }
      """;
}
