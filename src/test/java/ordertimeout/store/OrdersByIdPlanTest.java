package ordertimeout.store;

import ordertimeout.order.OrderIds;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * The statements that change orders by id find them by primary key, also where the partial index of unpaid orders,
 * whose third column is the id, is small: a partition of 15,000 orders, 3,000 of them unpaid, with fresh statistics (a
 * day's partition under load, as in the steady-state benchmark). Planned on that index, a pay group of 8 read all of
 * it for each of its two lookups (3.4 ms under load, where the primary key takes a few pages), and it grows with the
 * unpaid orders.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class OrdersByIdPlanTest {
  private static final int ORDERS = 15_000;
  private static final long DAY = 86_400_000L;
  /** A day of its own, far ahead of the partitions the migration and the job make: dropped at the end. */
  private final long from = OrderIds.firstIdAt(OrderPartitions.dayStart(System.currentTimeMillis()) + 210 * DAY);
  private final long to = OrderIds.firstIdAt(OrderPartitions.dayStart(System.currentTimeMillis()) + 211 * DAY);
  private final String orders = OrderPartitions.name(OrderPartitions.ORDERS, from);
  private final String items = OrderPartitions.name(OrderPartitions.ITEMS, from);

  @BeforeAll
  void aDayWithAFifthUnpaid() {
    TestDatabase.reset();
    Sql.execute("CREATE TABLE " + orders + " PARTITION OF orders FOR VALUES FROM (" + from + ") TO (" + to + ")");
    Sql.execute("CREATE TABLE " + items + " PARTITION OF order_items FOR VALUES FROM (" + from + ") TO (" + to + ")");
    Sql.execute("""
        INSERT INTO orders (id, shard, client, user_id, category, status, close_reason, created_at, close_at, paid_at,
                            closed_at)
        SELECT ? + n * 4096, n % 64, 'client-1', 'user-' || (n % 5000), 'physical',
               (ARRAY['UNPAID', 'PAID', 'CLOSED', 'PAID', 'CLOSED'])[n % 5 + 1],
               CASE WHEN n % 5 IN (2, 4) THEN 'TIMEOUT' END,
               now(), now() + (n % 900) * interval '1 second', CASE WHEN n % 5 IN (1, 3) THEN now() END,
               CASE WHEN n % 5 IN (2, 4) THEN now() END
        FROM generate_series(1, ?) AS n""", from, ORDERS);
    Sql.execute("INSERT INTO order_items (order_id, sku, qty) SELECT ? + n * 4096, 'SKU-' || (n % 1000), 1 "
        + "FROM generate_series(1, ?) AS n", from, ORDERS);
    Sql.execute("ANALYZE " + orders);
    Sql.execute("ANALYZE " + items);
  }

  @AfterAll
  void empty() {
    for (String table : List.of(orders, items)) {
      Sql.execute("DROP TABLE IF EXISTS " + table);
    }
    TestDatabase.reset();
  }

  @Test
  void ordersAreFoundByPrimaryKey() throws SQLException {
    Map<String, String> plans = new LinkedHashMap<>();
    String some = "ARRAY[" + (from + 5 * 4096) + ", " + (from + 10 * 4096) + ", " + (from + 15 * 4096) + ", "
        + (from + 20 * 4096) + ", " + (from + 25 * 4096) + ", " + (from + 30 * 4096) + ", " + (from + 35 * 4096) + ", "
        + (from + 40 * 4096) + "]::bigint[]";
    String one = Long.toString(from + 5 * 4096);
    try (Connection connection = TestDatabase.jdbc()) {
      Sql.rows(connection, "SET plan_cache_mode = force_custom_plan");
      plans.put("pay", customPlan(connection, ordertimeout.store.Sql.PAY, one + ", NULL"));
      plans.put("pay group", customPlan(connection, ordertimeout.store.Sql.PAY_ORDERS,
          some + ", ARRAY[NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL]::text[]"));
      plans.put("close batch", customPlan(connection, ordertimeout.store.Sql.CLOSE_DUE, some + ", 'TIMEOUT'"));
      plans.put("close on request", customPlan(connection, ordertimeout.store.Sql.CLOSE_ON_REQUEST,
          some + ", 'ADMIN', NULL"));
      plans.put("orders not yet due", customPlan(connection, ordertimeout.store.Sql.SELECT_NOT_YET_DUE, some));
      plans.put("reminders", customPlan(connection, ordertimeout.store.Sql.REMIND_DUE, some));
      plans.put("bulk extend", customPlan(connection, ordertimeout.store.Sql.EXTEND_DEADLINES_BY_SECONDS,
          some + ", 60"));
    }
    SoftAssertions.assertSoftly(softly -> plans.forEach((what, plan) -> {
      softly.assertThat(indexesOfOrdersIn(plan)).as(what + ":\n" + plan).isNotEmpty().containsOnly(orders + "_pkey");
      softly.assertThat(plan).as(what + ":\n" + plan).doesNotContain("Seq Scan on " + orders);
    }));
  }

  /** The indexes of the orders partition a plan reads. */
  private List<String> indexesOfOrdersIn(String plan) {
    return Pattern.compile("(?:Index Scan|Index Only Scan) using (\\w+) on " + orders + "\\b"
            + "|Bitmap Index Scan on (" + orders + "\\w*)").matcher(plan).results()
        .map(match -> match.group(1) != null ? match.group(1) : match.group(2)).collect(Collectors.toList());
  }

  /** EXPLAIN of a service statement prepared as the service's sessions run it, planned for {@code arguments} (SQL). */
  private static String customPlan(Connection connection, String statement, String arguments) {
    Sql.rows(connection, "PREPARE planned AS " + statement);
    try {
      return Sql.rows(connection, "EXPLAIN EXECUTE planned(" + arguments + ")").stream()
          .map(row -> row.values().iterator().next().toString()).collect(Collectors.joining("\n"));
    } finally {
      Sql.rows(connection, "DEALLOCATE planned");
    }
  }
}
