package ordertimeout.bench;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLWarning;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What the status read (order_view, planned once per session: migration V13, decision 0007) costs once today's
 * partition fills, by the state the partitions were in when the session made its plan: new (never analyzed, as the
 * partitions job creates them) or analyzed while empty (after a manual ANALYZE). Each state: empty tables without
 * statistics, the session's first read, then {@code orders} orders with an item each put into today's partition from
 * another connection, then reads of them timed on the same session, and the indexes its plan used there (auto_explain).
 * Not part of run-all.sh (under a minute).
 *
 * <p>Arguments: orders (20000), reads per state (400).
 */
public final class StatusReadPlanBenchmark {
  /** An index a plan line scans: "Index Scan using X on ...", "Index Only Scan using X", "Bitmap Index Scan on X". */
  private static final Pattern INDEX = Pattern.compile("(?:Scan using|Bitmap Index Scan on) (\\S+)");

  public static void main(String[] args) throws Exception {
    int orders = args.length > 0 ? Integer.parseInt(args[0]) : 20_000;
    int reads = args.length > 1 ? Integer.parseInt(args[1]) : 400;
    try (BenchDatabase db = BenchDatabase.fresh("bench-db-status-read-plan")) {
      for (boolean analyzedEmpty : new boolean[] {false, true}) {
        db.executeScript("TRUNCATE orders, order_items", """
            DELETE FROM pg_statistic
            WHERE starelid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent IN ('orders'::regclass, 'order_items'::regclass))
               OR starelid IN ('orders'::regclass, 'order_items'::regclass)""");
        if (analyzedEmpty) {
          db.executeScript("ANALYZE orders", "ANALYZE order_items");
        }
        long firstId = (long) db.number("SELECT order_id_at(now())");
        try (Connection session = db.setup.openJdbc(); Statement statement = session.createStatement()) {
          statement.executeQuery("SELECT * FROM order_view(1, NULL)").close(); // the session's plan
          db.execute("""
              INSERT INTO orders (id, shard, client, user_id, category, status, created_at, close_at)
              SELECT ?::bigint + n, n % 64, 'client-a', 'user-' || n, 'physical', 'UNPAID', now(), now() + interval '1 hour'
              FROM generate_series(1, ?) AS n""", firstId, orders);
          db.execute("INSERT INTO order_items (order_id, sku, qty) SELECT ?::bigint + n, 'SKU-' || (n % 50), 2 "
              + "FROM generate_series(1, ?) AS n", firstId, orders);
          List<Long> micros = new ArrayList<>();
          for (int i = 0; i < reads; i++) {
            long started = System.nanoTime();
            statement.executeQuery("SELECT * FROM order_view(" + (firstId + 1 + (i * 97L) % orders) + ", 'client-a')").close();
            micros.add((System.nanoTime() - started) / 1000);
          }
          micros.sort(Long::compare);
          System.out.printf("status-read-plan: planned on partitions %s; %d reads of %d orders in today's partition: "
                  + "median %d us, p90 %d us; today's partition read by %s%n",
              analyzedEmpty ? "analyzed while empty" : "new (never analyzed)", reads, orders,
              micros.get(reads / 2), micros.get(reads * 9 / 10), indexesOfTodaysPartition(statement, firstId + 1));
        }
      }
    }
    System.exit(0);
  }

  /** The indexes the session's plan of a read scans in today's partition, from auto_explain's notice. */
  private static Set<String> indexesOfTodaysPartition(Statement session, long id) throws SQLException {
    session.execute("LOAD 'auto_explain'");
    session.execute("SET auto_explain.log_min_duration = 0");
    session.execute("SET auto_explain.log_nested_statements = on");
    session.execute("SET auto_explain.log_level = notice");
    session.execute("SET client_min_messages = notice");
    String today;
    try (ResultSet partition = session.executeQuery("SELECT tableoid::regclass::text FROM orders WHERE id = " + id)) {
      partition.next();
      today = partition.getString(1).substring("orders".length()); // _p20261203
    }
    session.clearWarnings();
    try (ResultSet read = session.executeQuery("SELECT * FROM order_view(" + id + ", 'client-a')")) {
      read.next();
    }
    Set<String> indexes = new TreeSet<>();
    for (SQLWarning warning = session.getWarnings(); warning != null; warning = warning.getNextWarning()) {
      for (String line : warning.getMessage().split("\n")) {
        Matcher index = INDEX.matcher(line);
        if (index.find() && (index.group(1).startsWith("orders" + today + "_")
            || index.group(1).startsWith("order_items" + today + "_"))) {
          indexes.add(index.group(1));
        }
      }
    }
    return indexes;
  }
}
