package ordertimeout.store;

import io.vertx.core.json.JsonObject;
import ordertimeout.order.OrderItem;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.sql.Array;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.LongStream;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * An order's items come out of PostgreSQL in the order the service sorts a create's items in
 * ({@link OrderItem#BY_SKU}), whatever the database's collation. On a database of its own whose default collation is
 * ICU's en-US, every statement that lists items (the read, the reads by ids and by page, the pay group's answer) and
 * every event's payload (of a create, the pay group, the close batch, a single pay, a cancel) list them so. Without
 * it, an order answered from the status cache as its create kept it listed its items in another order than the same
 * order read from PostgreSQL (V28). The other statements that write an event (reminders, deadline moves, late pays)
 * list items through the same {@code Sql} constants as the single pay and the cancel.
 */
class ItemOrderTest {
  private static final List<String> SKUS = List.of("a", "B", "A-1", "a_2", "b.1");
  private static final List<String> SORTED =
      SKUS.stream().map(sku -> new OrderItem(sku, 1)).sorted(OrderItem.BY_SKU).map(OrderItem::sku).toList();
  private static final String SKU_ARRAY = SKUS.stream().map(sku -> "'" + sku + "'")
      .collect(Collectors.joining(", ", "ARRAY[", "]::text[]"));

  private static OwnDatabase database;

  @BeforeAll
  static void databaseCollatedAsEnUs() {
    database = new OwnDatabase("items", "TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US'");
    database.migrateToNewest();
  }

  @AfterAll
  static void dropDatabase() {
    if (database != null) {
      database.close();
    }
  }

  @Test
  void everyStatementListsAnOrdersItemsAsTheServiceSortsThem() throws SQLException {
    try (Connection c = database.connect()) {
      assertThat(strings(rows(c, "SELECT array_agg(s ORDER BY s) AS a FROM unnest(" + SKU_ARRAY + ") s").get(0)
          .get("a"))).as("this database's own order is not Java's, or the test could not fail").isNotEqualTo(SORTED);
      rows(c, "INSERT INTO inventory (sku, available) SELECT s, 1000 FROM unnest(" + SKU_ARRAY + ") s");
      long first = ((Number) rows(c, "SELECT order_id_at(now()) AS id").get(0).get("id")).longValue();
      long[] ids = LongStream.range(first, first + 6).toArray();
      // one order read, one paid by the group, one closed by the batch (due at once), one paid alone, one cancelled
      String idArray = array(ids, "bigint");
      String items = Arrays.stream(ids).boxed().flatMap(id -> SKUS.stream().map(sku -> id)).map(String::valueOf)
          .collect(Collectors.joining(", ", "ARRAY[", "]::bigint[]"));
      String skus = Stream.generate(() -> SKUS.stream()).limit(ids.length).flatMap(s -> s)
          .map(sku -> "'" + sku + "'").collect(Collectors.joining(", ", "ARRAY[", "]::text[]"));
      rows(c, "SELECT * FROM create_orders(" + idArray + ", array_fill(0, ARRAY[6]), array_fill('client-a'::text, "
          + "ARRAY[6]), array_fill('u-1'::text, ARRAY[6]), array_fill('default'::text, ARRAY[6]), ARRAY[600, 600, 0, "
          + "600, 600, 600], array_fill(NULL::int, ARRAY[6]), " + items + ", " + skus + ", array_fill(1, ARRAY["
          + ids.length * SKUS.size() + "]))");

      // checked softly, so that a failure names every statement that lists items in another order
      SoftAssertions softly = new SoftAssertions();
      softly.assertThat(strings(rows(c, Sql.SELECT_ORDER.replace("$1", ids[0] + "").replace("$2", "NULL"))
          .get(0).get("skus"))).as("order_view").isEqualTo(SORTED);
      softly.assertThat(strings(rows(c, Sql.SELECT_ORDERS.replace("$1", idArray)).get(0).get("skus")))
          .as("the read by ids").isEqualTo(SORTED);
      softly.assertThat(strings(rows(c, Sql.searchPage(Sql.MATCH_ANY, 1).replace("$1", "1")).get(0).get("skus")))
          .as("a page of the search").isEqualTo(SORTED);
      softly.assertThat(strings(rows(c, Sql.PAY_ORDERS.replace("$1", array(ids[1], "bigint"))
          .replace("$2", "ARRAY[NULL]::text[]")).get(0).get("skus"))).as("the pay group's answer").isEqualTo(SORTED);
      softly.assertThat(rows(c, Sql.CLOSE_DUE.replace("$1", array(ids[2], "bigint")).replace("$2", "'TIMEOUT'")))
          .as("the close batch").hasSize(1);
      softly.assertThat(rows(c, Sql.PAY.replace("$1", ids[3] + "").replace("$2", "NULL::text")))
          .as("the single pay").hasSize(1);
      softly.assertThat(rows(c, Sql.CLOSE_ON_REQUEST.replace("$1", array(ids[4], "bigint"))
          .replace("$2", "'USER_CANCELLED'").replace("$3", "NULL"))).as("the cancel").hasSize(1);

      List<Map<String, Object>> events =
          rows(c, "SELECT type, order_id, payload::text AS p FROM outbox ORDER BY event_id");
      softly.assertThat(events).extracting(event -> event.get("type")).as("6 creates, 2 pays, 2 closes").containsOnly(
          "ORDER_CREATED", "ORDER_PAID", "ORDER_CLOSED").hasSize(10);
      events.forEach(event -> softly.assertThat(new JsonObject((String) event.get("p")).getJsonArray("items").stream()
          .map(item -> ((JsonObject) item).getString("sku")).toList())
          .as("%s of the test's order %d", event.get("type"), (long) event.get("order_id") - ids[0])
          .isEqualTo(SORTED));
      softly.assertAll();
    }
  }

  /** {@code sql}'s rows ({@link Sql}'s statements with their parameters written in; the test helper of that name). */
  private static List<Map<String, Object>> rows(Connection c, String sql, Object... params) {
    return ordertimeout.support.Sql.rows(c, sql, params);
  }

  /**
   * No aggregate anywhere sorts by a SKU in the database's collation: not in a function of the migrated schema, not in
   * a statement of {@link Sql}. A function copied from a migration before V28 would bring that back.
   */
  @Test
  void noFunctionOrStatementSortsItemsInTheDatabasesCollation() throws SQLException, IllegalAccessException {
    Pattern byCollation = Pattern.compile("ORDER BY \\w+\\.sku\\)");
    try (Connection c = database.connect()) {
      assertThat(rows(c, "SELECT p.proname AS name, p.prosrc AS source FROM pg_proc p "
          + "JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public'").stream()
          .filter(function -> byCollation.matcher((String) function.get("source")).find())
          .map(function -> function.get("name"))).as("functions").isEmpty();
    }
    List<String> statements = new ArrayList<>();
    for (Field field : Sql.class.getDeclaredFields()) {
      if (Modifier.isStatic(field.getModifiers()) && field.getType() == String.class) {
        field.setAccessible(true);
        if (byCollation.matcher((String) field.get(null)).find()) {
          statements.add(field.getName());
        }
      }
    }
    assertThat(statements).as("statements of Sql").isEmpty();
  }

  private static String array(long id, String type) {
    return array(new long[] {id}, type);
  }

  private static String array(long[] values, String type) {
    return Arrays.stream(values).mapToObj(String::valueOf)
        .collect(Collectors.joining(", ", "ARRAY[", "]::" + type + "[]"));
  }

  private static List<String> strings(Object sqlArray) throws SQLException {
    return List.of((String[]) ((Array) sqlArray).getArray());
  }
}
