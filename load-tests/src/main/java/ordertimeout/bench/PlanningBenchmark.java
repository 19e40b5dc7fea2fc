package ordertimeout.bench;

import java.lang.reflect.Field;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.LongStream;

/**
 * How long PostgreSQL takes to plan the statements that change an array of orders, as the service's sessions plan
 * them on every call (custom plans, decision 0007): the close on request, the reminders and the bulk extend (the
 * pay group's and the close batch's statements are planned once per session since migrations V21 and V22), with
 * {@code ids} ids of today, on empty tables with the migration's partitions and {@code partitions} more of each
 * partitioned table. {@code EXPLAIN (SUMMARY)} with the ids written out, as a custom plan sees them; {@code plans}
 * plans of each, alternating, the first tenth left out; median, p10 and p90.
 *
 * <p>{@code mvn -B -Pbench test-compile exec:java -Dexec.mainClass=ordertimeout.bench.PlanningBenchmark
 * -Dexec.args="PARTITIONS IDS PLANS"} (defaults 4 8 100; under a minute). The statements are read from the service's
 * package-private {@code ordertimeout.store.Sql}, so that a checkout of any commit measures its own.
 */
public final class PlanningBenchmark {
  private static final long DAY_MILLIS = 86_400_000L;

  private PlanningBenchmark() {}

  public static void main(String[] args) throws Exception {
    int extraPartitions = args.length > 0 ? Integer.parseInt(args[0]) : 4;
    int ids = args.length > 1 ? Integer.parseInt(args[1]) : 8;
    int plans = args.length > 2 ? Integer.parseInt(args[2]) : 100;
    try (BenchDatabase db = BenchDatabase.fresh("bench-db-planning")) {
      for (int day = 0; day < extraPartitions; day++) {
        // far ahead of the partitions the migration makes, a day each, as the partitions job would add them
        db.executeScript(
            "CREATE TABLE planning_orders_" + day + " PARTITION OF orders FOR VALUES FROM (order_id_at(now() + "
                + (300 + day) + " * interval '1 day')) TO (order_id_at(now() + " + (301 + day) + " * interval '1 day'))",
            "CREATE TABLE planning_items_" + day + " PARTITION OF order_items FOR VALUES FROM (order_id_at(now() + "
                + (300 + day) + " * interval '1 day')) TO (order_id_at(now() + " + (301 + day) + " * interval '1 day'))");
      }
      long partitions = (long) db.number("SELECT count(*) FROM pg_inherits WHERE inhparent = 'orders'::regclass");
      long firstId = (long) db.number("SELECT order_id_at(now())");
      String idArray = "'{" + LongStream.range(0, ids).mapToObj(k -> Long.toString(firstId + k * 4096))
          .collect(Collectors.joining(",")) + "}'::bigint[]";
      Map<String, String> statements = new LinkedHashMap<>();
      statements.put("close on request", bind(sql("CLOSE_ON_REQUEST"), idArray, "'ADMIN'", "NULL"));
      statements.put("reminders", bind(sql("REMIND_DUE"), idArray));
      statements.put("bulk extend", bind(sql("EXTEND_DEADLINES_BY_SECONDS"), idArray, "60", "604800"));
      Map<String, List<Double>> millis = new LinkedHashMap<>();
      statements.keySet().forEach(name -> millis.put(name, new ArrayList<>()));
      try (Connection connection = db.setup.openJdbc(); Statement statement = connection.createStatement()) {
        for (int i = 0; i < plans; i++) {
          for (Map.Entry<String, String> each : statements.entrySet()) {
            double planned = planningMillis(statement, each.getValue());
            if (i >= plans / 10) {
              millis.get(each.getKey()).add(planned);
            }
          }
        }
      }
      System.out.printf("planning: %d partitions of orders and of order_items, %d ids, %d plans each (median, p10-p90):%n",
          partitions, ids, plans);
      millis.forEach((name, times) -> {
        Collections.sort(times);
        System.out.printf("  %-20s %.3f ms (%.3f-%.3f)%n", name, at(times, 0.5), at(times, 0.1), at(times, 0.9));
      });
    }
  }

  /** A statement of ordertimeout.store.Sql, by its field's name. */
  private static String sql(String name) throws ReflectiveOperationException {
    Field field = Class.forName("ordertimeout.store.Sql").getDeclaredField(name);
    field.setAccessible(true);
    return (String) field.get(null);
  }

  /** The statement with {@code $1}, {@code $2}... written out, highest first so that $1 does not eat $10. */
  private static String bind(String sql, String... values) {
    String bound = sql;
    for (int i = values.length; i >= 1; i--) {
      bound = bound.replace("$" + i, values[i - 1]);
    }
    return bound;
  }

  private static double planningMillis(Statement statement, String sql) throws SQLException {
    try (ResultSet rows = statement.executeQuery("EXPLAIN (SUMMARY) " + sql)) {
      while (rows.next()) {
        String line = rows.getString(1);
        if (line.startsWith("Planning Time:")) {
          return Double.parseDouble(line.replaceAll("[^0-9.]", ""));
        }
      }
    }
    throw new IllegalStateException("no planning time for " + sql);
  }

  private static double at(List<Double> sorted, double fraction) {
    return sorted.get(Math.min(sorted.size() - 1, (int) (fraction * sorted.size())));
  }
}
