package ordertimeout.store;

import ordertimeout.order.OrderFilter;
import ordertimeout.order.OrderStatus;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The search's common filters are answered from indexes (in each partition of orders and order_items that holds
 * rows: {@link #seqScansOfRows}): the planner's own choice (no {@code enable_seqscan = off})
 * on 200,000 orders of 20 clients and 2,000 SKUs with fresh statistics (ANALYZE), for the very statement the service
 * runs (its first page), with the filter's values bound.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class SearchIndexTest {
  private static final int ORDERS = 200_000;
  private static final Instant NOW = Instant.now().truncatedTo(ChronoUnit.SECONDS);

  @BeforeAll
  void manyOrders() {
    TestDatabase.reset();
    // a third each UNPAID, PAID, CLOSED; deadlines spread over 10 days ahead, creation over the day before
    Sql.execute("""
        INSERT INTO orders (id, shard, client, user_id, category, status, close_reason, created_at, close_at, paid_at, closed_at)
        SELECT n, n % 64, 'client-' || (n % 20), 'user-' || (n % 5000), 'physical',
               (ARRAY['UNPAID', 'PAID', 'CLOSED'])[n % 3 + 1], CASE WHEN n % 3 = 2 THEN 'ADMIN' END,
               ?::timestamptz - interval '1 day' + n * interval '400 milliseconds',
               ?::timestamptz + (n % 14400) * interval '1 minute',
               CASE WHEN n % 3 = 1 THEN ?::timestamptz END, CASE WHEN n % 3 = 2 THEN ?::timestamptz END
        FROM generate_series(1, ?) AS n""", ts(NOW), ts(NOW), ts(NOW), ts(NOW), ORDERS);
    // before the items: their insert trigger looks each order up, and on statistics that still say orders is empty it
    // plans a sequential scan per order (200,000 x 200,000 rows: a fresh-clone run sat here for over 12 minutes)
    Sql.execute("ANALYZE orders");
    Sql.execute("INSERT INTO order_items (order_id, sku, qty) SELECT n, 'SKU-' || (n % 2000), 1 FROM generate_series(1, ?) AS n", ORDERS);
    Sql.execute("ANALYZE order_items");
  }

  @AfterAll
  void empty() {
    TestDatabase.reset();
  }

  static Stream<Arguments> commonFilters() {
    Instant inAnHour = NOW.plusSeconds(3600);
    return Stream.of(
        Arguments.of("status and deadline range", filter(OrderStatus.UNPAID, null, null, null, NOW, inAnHour, null, null)),
        Arguments.of("status", filter(OrderStatus.UNPAID, null, null, null, null, null, null, null)),
        Arguments.of("client", filter(null, "client-7", null, null, null, null, null, null)),
        Arguments.of("client and user", filter(null, "client-7", "user-7", null, null, null, null, null)),
        Arguments.of("user of a client with status", filter(OrderStatus.PAID, "client-4", "user-4", null, null, null, null, null)),
        Arguments.of("sku", filter(null, null, null, "SKU-42", null, null, null, null)),
        Arguments.of("sku and status", filter(OrderStatus.UNPAID, null, null, "SKU-42", null, null, null, null)),
        Arguments.of("creation range", filter(null, null, null, null, null, null, NOW.minusSeconds(7200), NOW.minusSeconds(3600))),
        Arguments.of("no filter", filter(null, null, null, null, null, null, null, null)));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("commonFilters")
  void theFirstPageIsReadFromIndexesNotBySequentialScan(String what, OrderFilter filter) {
    String plan = plan(filter, null);
    assertThat(seqScansOfRows(plan)).as(what + ":\n" + plan).isEmpty();
    assertThat(plan).as(what + ":\n" + plan).containsPattern("Index (Only )?Scan( Backward)? using \\w+ on orders|Bitmap Index Scan on orders_");
  }

  @ParameterizedTest(name = "{0}, a later page")
  @MethodSource("commonFilters")
  void aLaterPageIsReadFromIndexesToo(String what, OrderFilter filter) {
    String plan = plan(filter, (long) ORDERS / 2);
    assertThat(seqScansOfRows(plan)).as(what + ":\n" + plan).isEmpty();
  }

  /** A bulk job's batch (its filter, the id range after the last batch up to its bound, its submission time) too. */
  @ParameterizedTest(name = "{0}, a bulk job's batch")
  @MethodSource("commonFilters")
  void aBulkJobsBatchIsReadFromIndexesToo(String what, OrderFilter filter) {
    OrderSearch.Where where = OrderSearch.where(filter, null);
    int n = where.next();
    String statement = ordertimeout.store.Sql.nextMatches(where.sql(), n, n + 1, n + 2, n + 3)
        .replaceAll("\\$\\d+", "?");
    Object[] values = Stream.concat(where.values().stream(),
        Stream.of((long) ORDERS / 4, (long) ORDERS, NOW.atOffset(ZoneOffset.UTC), 500)).toArray();
    String plan = Sql.rows("EXPLAIN " + statement, values).stream()
        .map(row -> row.values().iterator().next().toString()).collect(Collectors.joining("\n"));
    assertThat(seqScansOfRows(plan)).as(what + ":\n" + plan).isEmpty();
  }

  /**
   * The partitions of orders and order_items (V11) the plan reads by sequential scan that hold rows. An empty
   * partition (the days ahead) costs nothing to scan, and the planner rightly scans it so.
   */
  static List<String> seqScansOfRows(String plan) {
    return Pattern.compile("Seq Scan on ((?:orders|order_items)\\w*)").matcher(plan).results()
        .map(match -> match.group(1))
        .filter(table -> Sql.count("SELECT count(*) FROM (SELECT 1 FROM " + table + " LIMIT 1) t") > 0)
        .distinct()
        .toList();
  }

  /** EXPLAIN of the service's page statement, its $n bound in order (the statement numbers them so). */
  private static String plan(OrderFilter filter, Long belowId) {
    OrderSearch.Where where = OrderSearch.where(filter, belowId);
    String statement = ordertimeout.store.Sql.searchPage(where.sql(), where.next()).replaceAll("\\$\\d+", "?");
    Object[] values = Stream.concat(where.values().stream().map(SearchIndexTest::jdbc), Stream.of(51)).toArray();
    List<Map<String, Object>> rows = Sql.rows("EXPLAIN " + statement, values);
    return rows.stream().map(row -> row.values().iterator().next().toString()).collect(Collectors.joining("\n"));
  }

  private static Object jdbc(Object value) {
    return value instanceof OffsetDateTime time ? time : value;
  }

  private static OrderFilter filter(OrderStatus status, String client, String userId, String sku, Instant dueAfter,
                                    Instant dueBefore, Instant createdAfter, Instant createdBefore) {
    return new OrderFilter(status, client, userId, sku, dueAfter, dueBefore, createdAfter, createdBefore);
  }

  private static String ts(Instant instant) {
    return instant.atOffset(ZoneOffset.UTC).toString();
  }
}
