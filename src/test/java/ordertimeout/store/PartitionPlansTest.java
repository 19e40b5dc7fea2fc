package ordertimeout.store;

import ordertimeout.order.OrderIds;
import ordertimeout.support.AutoExplain;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import java.util.stream.LongStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * On the partitioned orders (V11), the statements of the wheel's reload by shard (deadlines, reminders, holds), its
 * catch-up of the last seconds' orders and the sweep's overdue page still read the indexes of each partition: the
 * planner's own choice on 200,000 orders in one day's partition with fresh statistics, no sequential scan of a
 * partition that holds rows ({@link SearchIndexTest#seqScansOfRows}; the search's own plans are SearchIndexTest's).
 * The statements that change orders by id keep only their partitions, and on a smaller day of their own read its
 * orders by primary key. Then the big partition (with its 200,000 orders and their items) is taken out as the
 * partitions job does, DETACH and DROP, and the time it took printed: no assertion on it.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class PartitionPlansTest {
  private static final int ORDERS = 200_000;
  private static final Instant NOW = Instant.now().truncatedTo(ChronoUnit.SECONDS);
  private static final long DAY = 86_400_000L;
  /** A day of its own, far ahead of the partitions the migration and the job make: dropped at the end. */
  private final long from = OrderIds.firstIdAt(OrderPartitions.dayStart(System.currentTimeMillis()) + 200 * DAY);
  private final long to = OrderIds.firstIdAt(OrderPartitions.dayStart(System.currentTimeMillis()) + 201 * DAY);
  private final String orders = OrderPartitions.name(OrderPartitions.ORDERS, from);
  private final String items = OrderPartitions.name(OrderPartitions.ITEMS, from);

  @BeforeAll
  void manyOrdersInOneDay() {
    TestDatabase.reset();
    Sql.execute("CREATE TABLE " + orders + " PARTITION OF orders FOR VALUES FROM (" + from + ") TO (" + to + ")");
    Sql.execute("CREATE TABLE " + items + " PARTITION OF order_items FOR VALUES FROM (" + from + ") TO (" + to + ")");
    // a third each UNPAID, PAID, CLOSED; deadlines spread over 10 days ahead, a reminder for a tenth, a hold for a hundredth
    Sql.execute("""
        INSERT INTO orders (id, shard, client, user_id, category, status, close_reason, created_at, close_at, remind_at,
                            hold_until, paid_at, closed_at)
        SELECT ? + n * 4096, n % 64, 'client-' || (n % 20), 'user-' || (n % 5000), 'physical',
               (ARRAY['UNPAID', 'PAID', 'CLOSED'])[n % 3 + 1], CASE WHEN n % 3 = 2 THEN 'ADMIN' END,
               ?::timestamptz, ?::timestamptz + (n % 14400) * interval '1 minute',
               CASE WHEN n % 10 = 0 THEN ?::timestamptz + (n % 14400) * interval '1 minute' - interval '5 minutes' END,
               CASE WHEN n % 100 = 0 AND n % 3 = 0 THEN ?::timestamptz + interval '10 minutes' END,
               CASE WHEN n % 3 = 1 THEN ?::timestamptz END, CASE WHEN n % 3 = 2 THEN ?::timestamptz END
        FROM generate_series(1, ?) AS n""", from, ts(NOW), ts(NOW), ts(NOW), ts(NOW), ts(NOW), ts(NOW), ORDERS);
    Sql.execute("INSERT INTO order_items (order_id, sku, qty) SELECT ? + n * 4096, 'SKU-' || (n % 2000), 1 FROM generate_series(1, ?) AS n",
        from, ORDERS);
    Sql.execute("ANALYZE orders");
    Sql.execute("ANALYZE order_items");
  }

  @AfterAll
  void empty() {
    for (String table : List.of(orders, items)) {
      Sql.execute("DROP TABLE IF EXISTS " + table);
    }
    TestDatabase.reset();
  }

  @Test
  @Order(1)
  void reloadAndSweepReadThePartialIndexesOfEachPartition() {
    Map<String, String> plans = Map.of(
        "reload of deadlines", plan(ordertimeout.store.Sql.PENDING_DEADLINES_PAGE, 7, ts(NOW.minusSeconds(1)), -1L, 1000),
        "reload of reminders", plan(ordertimeout.store.Sql.PENDING_REMINDERS_PAGE, 7, ts(NOW.minusSeconds(1)), -1L, 1000),
        "reload of holds", plan(ordertimeout.store.Sql.PENDING_HOLDS_PAGE, 7, ts(NOW.minusSeconds(1)), -1L, 1000),
        "sweep", plan(ordertimeout.store.Sql.OVERDUE_PAGE, 7, -36_000, -36_000, ts(NOW.minusSeconds(86_400)), -1L, 1000),
        "catch-up of recent orders", plan(ordertimeout.store.Sql.RECENT_PENDING_PAGE, from + (ORDERS - 5_000) * 4096L,
            new Integer[] {7, 8, 9}, 1000));
    plans.forEach((what, plan) -> {
      assertThat(SearchIndexTest.seqScansOfRows(plan)).as(what + ":\n" + plan).isEmpty();
      assertThat(plan).as(what + ":\n" + plan).containsPattern("Index (Only )?Scan using \\w+ on " + orders + "|Bitmap Heap Scan on " + orders);
    });
    // ids from the last seconds: only the partitions from that id's on (here the last), by primary key
    String catchUp = plans.get("catch-up of recent orders");
    assertThat(partitionsIn(catchUp)).as(catchUp).containsExactly(orders);
    assertThat(catchUp).as(catchUp).contains("Index Scan using " + orders + "_pkey");
  }

  /**
   * The sweep's probe of which shards to page finds overdue reminders by their own partial index, its bound on
   * {@code remind_at}, also on a day's partition not analyzed yet (autovacuum analyzes it now and then as it fills).
   * Left to choose, the planner took the index of unpaid orders by deadline there, bounded by the probe's
   * {@code close_at > now()}, and walked every unpaid order of the shard not yet due: 99-120 ms a pass at 97,000 such
   * orders (2026-12-05, wrk's creates), 4-5 ms by the reminders' index.
   */
  @Test
  @Order(1)
  void theSweepsProbeFindsOverdueRemindersByTheirOwnIndex() {
    long dayFrom = OrderIds.firstIdAt(OrderPartitions.dayStart(System.currentTimeMillis()) + 202 * DAY);
    long dayTo = OrderIds.firstIdAt(OrderPartitions.dayStart(System.currentTimeMillis()) + 203 * DAY);
    String day = OrderPartitions.name(OrderPartitions.ORDERS, dayFrom);
    try {
      Sql.execute("CREATE TABLE " + day + " PARTITION OF orders FOR VALUES FROM (" + dayFrom + ") TO (" + dayTo + ")");
      Sql.execute("ALTER TABLE " + day + " SET (autovacuum_enabled = false)");
      Sql.execute("""
          INSERT INTO orders (id, shard, client, user_id, category, status, created_at, close_at, remind_at)
          SELECT ? + n * 4096, n % 64, 'client-1', 'user-' || n, 'physical', 'UNPAID', now(),
                 now() + interval '30 minutes', now() + interval '25 minutes'
          FROM generate_series(1, 20000) AS n""", dayFrom);
      String probe = plan(ordertimeout.store.Sql.SHARDS_WITH_OVERDUE, new Integer[] {7}, 1, 1, 1);
      List<String> lines = probe.lines().toList();
      List<String> boundsOnTheDay = IntStream.range(1, lines.size())
          .filter(i -> lines.get(i - 1).contains(" on " + day + " ") && lines.get(i).contains("Index Cond"))
          .mapToObj(lines::get).toList();
      assertThat(boundsOnTheDay).as(probe).hasSize(2).anySatisfy(bound -> assertThat(bound).contains("remind_at <"))
          .noneSatisfy(bound -> assertThat(bound).contains("close_at >"));
    } finally {
      Sql.execute("DROP TABLE IF EXISTS " + day);
    }
  }

  /**
   * The statements that change orders by id are planned on every call (decision 0007), so each partition they keep
   * costs planning time: only the partitions of their ids, of orders and of order_items, are left in the plan, for
   * one order and for an array of them (whose items are read once, Sql.ITEMS_OF_ORDERS_1). The pay group's and the
   * close batch's statements, planned once per session since V21 and V22, keep every partition and are not among them.
   */
  @Test
  @Order(2)
  void statementsOfOrdersByIdPlanOnlyTheirPartitions() throws SQLException {
    Map<String, String> plans;
    try (Connection connection = TestDatabase.jdbc()) {
      long one = from + 4096;
      plans = plansOfOrdersById(connection, one, new long[] {from + 4096, from + 8192, from + 12288});
      plans.put("deadline move", customPlan(connection, ordertimeout.store.Sql.MOVE_DEADLINE_IF_UNCHANGED,
          one + ", now() + interval '1 hour', now()"));
      plans.put("late payment", customPlan(connection, ordertimeout.store.Sql.NOTE_LATE_PAYMENT, one + ", 'closed'"));
      plans.put("reopen", customPlan(connection, ordertimeout.store.Sql.REOPEN_PAID, one + ", 'TIMEOUT', now()"));
    }
    plans.forEach((what, plan) -> assertThat(partitionsIn(plan)).as(what + ":\n" + plan).containsExactlyInAnyOrder(orders, items));
  }

  /**
   * The statements that change orders by id find them by primary key, also where the partial index of unpaid orders,
   * whose third column is the id, is small: a day of its own with 15,000 orders, 3,000 of them unpaid, and fresh
   * statistics (a day's partition under load, as in the steady-state benchmark). With {@code status = 'UNPAID'} the
   * close batch took the index led by the status and the reminders the partial index of unsent reminders, and in the
   * benchmark the pay group of 8 read all of the unpaid index for each of its two lookups (3.4 ms under load). The
   * plans of the pay group and the close batch, made once per session inside pay_orders (V21) and close_due_orders
   * (V22), are read from auto_explain on calls rolled back.
   */
  @Test
  @Order(3)
  void ordersByIdAreFoundByPrimaryKeyOnADayWithFewUnpaid() throws SQLException {
    long day = OrderIds.firstIdAt(OrderPartitions.dayStart(System.currentTimeMillis()) + 210 * DAY);
    long nextDay = OrderIds.firstIdAt(OrderPartitions.dayStart(System.currentTimeMillis()) + 211 * DAY);
    String dayOrders = OrderPartitions.name(OrderPartitions.ORDERS, day);
    String dayItems = OrderPartitions.name(OrderPartitions.ITEMS, day);
    String range = " FOR VALUES FROM (" + day + ") TO (" + nextDay + ")";
    Sql.execute("CREATE TABLE " + dayOrders + " PARTITION OF orders" + range);
    Sql.execute("CREATE TABLE " + dayItems + " PARTITION OF order_items" + range);
    try {
      Sql.execute("""
          INSERT INTO orders (id, shard, client, user_id, category, status, close_reason, created_at, close_at, paid_at,
                              closed_at)
          SELECT ? + n * 4096, n % 64, 'client-1', 'user-' || (n % 5000), 'physical',
                 (ARRAY['UNPAID', 'PAID', 'CLOSED', 'PAID', 'CLOSED'])[n % 5 + 1],
                 CASE WHEN n % 5 IN (2, 4) THEN 'TIMEOUT' END, now(), now() + (n % 900) * interval '1 second',
                 CASE WHEN n % 5 IN (1, 3) THEN now() END, CASE WHEN n % 5 IN (2, 4) THEN now() END
          FROM generate_series(1, 15000) AS n""", day);
      Sql.execute("INSERT INTO order_items (order_id, sku, qty) SELECT ? + n * 4096, 'SKU-' || (n % 1000), 1 "
          + "FROM generate_series(1, 15000) AS n", day);
      Sql.execute("ANALYZE " + dayOrders);
      Sql.execute("ANALYZE " + dayItems);
      long[] some = LongStream.rangeClosed(1, 8).map(i -> day + i * 5 * 4096L).toArray();
      Map<String, String> plans;
      try (Connection connection = TestDatabase.jdbc()) {
        plans = plansOfOrdersById(connection, some[0], some);
        plans.put("orders not yet due", customPlan(connection, ordertimeout.store.Sql.SELECT_NOT_YET_DUE, array(some)));
        String anyClient = "ARRAY[" + String.join(", ", Collections.nCopies(some.length, "NULL")) + "]::text[]";
        plans.put("pay group (planned once, V21)", planInside(connection,
            "SELECT * FROM pay_orders(" + array(some) + ", " + anyClient + ")", "UPDATE orders o SET status = 'PAID'"));
        plans.put("close batch (planned once, V22)", planInside(connection,
            "SELECT * FROM close_due_orders(" + array(some) + ", 'TIMEOUT')", "UPDATE orders o SET status = 'CLOSED'"));
      }
      Pattern indexes = Pattern.compile("(?:Index Scan|Index Only Scan) using (\\w+) on " + dayOrders + "\\b"
          + "|Bitmap Index Scan on (" + dayOrders + "\\w*)");
      SoftAssertions.assertSoftly(softly -> plans.forEach((what, plan) -> {
        List<String> used = indexes.matcher(plan).results()
            .map(match -> match.group(1) != null ? match.group(1) : match.group(2)).toList();
        softly.assertThat(used).as(what + ":\n" + plan).isNotEmpty().containsOnly(dayOrders + "_pkey");
        softly.assertThat(plan).as(what + ":\n" + plan).doesNotContain("Seq Scan on " + dayOrders);
      }));
    } finally {
      Sql.execute("DROP TABLE " + dayOrders);
      Sql.execute("DROP TABLE " + dayItems);
    }
  }

  @Test
  @Order(4)
  void droppingADayOf200000OrdersTakesOnlyACatalogChange() {
    assertThat(Sql.count("SELECT count(*) FROM " + orders)).isEqualTo(ORDERS);
    long started = System.nanoTime();
    Sql.execute("ALTER TABLE orders DETACH PARTITION " + orders);
    Sql.execute("ALTER TABLE order_items DETACH PARTITION " + items);
    Sql.execute("DROP TABLE " + orders);
    Sql.execute("DROP TABLE " + items);
    long micros = (System.nanoTime() - started) / 1000;
    System.out.printf("PartitionPlansTest: DETACH and DROP of a partition of %,d orders (and their %,d items): %,d us%n",
        ORDERS, ORDERS, micros);
    assertThat(Sql.count("SELECT count(*) FROM orders WHERE id >= ? AND id < ?", from, to)).isZero();
  }

  /**
   * The plans, on {@code connection} (set to plan every call), of the statements that change orders by id: the pay of
   * order {@code one}, and the array statements of the orders {@code some}.
   */
  private static Map<String, String> plansOfOrdersById(Connection connection, long one, long[] some) {
    Sql.rows(connection, "SET plan_cache_mode = force_custom_plan");
    String ids = array(some);
    Map<String, String> plans = new LinkedHashMap<>();
    plans.put("pay", customPlan(connection, ordertimeout.store.Sql.PAY, one + ", NULL"));
    plans.put("close on request",
        customPlan(connection, ordertimeout.store.Sql.CLOSE_ON_REQUEST, ids + ", 'ADMIN', NULL"));
    plans.put("reminders", customPlan(connection, ordertimeout.store.Sql.REMIND_DUE, ids));
    plans.put("bulk extend", customPlan(connection, ordertimeout.store.Sql.EXTEND_DEADLINES_BY_SECONDS,
        ids + ", 60, 604800"));
    return plans;
  }

  /**
   * The plan, as auto_explain gives it, of the statement mentioning {@code text} inside the function that {@code call}
   * calls on {@code connection}, in a transaction rolled back.
   */
  private static String planInside(Connection connection, String call, String text) throws SQLException {
    connection.setAutoCommit(false);
    try (Statement statement = connection.createStatement()) {
      AutoExplain.sendPlansAsNotices(statement);
      statement.execute(call);
      return AutoExplain.plansMentioning(statement.getWarnings(), text);
    } finally {
      connection.rollback();
      connection.setAutoCommit(true);
    }
  }

  private static String array(long[] ids) {
    return Arrays.stream(ids).mapToObj(Long::toString).collect(Collectors.joining(", ", "ARRAY[", "]::bigint[]"));
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

  /** The partitions of orders and order_items a plan reads. */
  private static Set<String> partitionsIn(String plan) {
    return Pattern.compile("(?<= on )(order_items_p\\w+|orders_p\\w+)").matcher(plan).results()
        .map(match -> match.group(1)).collect(Collectors.toSet());
  }

  /** EXPLAIN of a service statement, its $n bound in order of appearance (a $n used twice is bound twice). */
  private static String plan(String statement, Object... values) {
    List<Map<String, Object>> rows = Sql.rows("EXPLAIN " + statement.replaceAll("\\$\\d+", "?"), values);
    return rows.stream().map(row -> row.values().iterator().next().toString()).collect(Collectors.joining("\n"));
  }

  private static OffsetDateTime ts(Instant instant) {
    return instant.atOffset(ZoneOffset.UTC);
  }
}
