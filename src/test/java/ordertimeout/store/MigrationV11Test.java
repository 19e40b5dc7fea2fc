package ordertimeout.store;

import ordertimeout.order.OrderIds;
import ordertimeout.support.Sql;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * V11 on a database that has orders: a database of its own is migrated to V10, given orders of every status with
 * items (and so client holdings), then migrated to V11. The rows stay, now in the floor partition; the parents have
 * every index and the triggers, which count inserts, updates and a TRUNCATE through the parent; ON CONFLICT (id)
 * works on the partitioned table.
 */
class MigrationV11Test {
  private static final int ORDERS = 3000;
  private OwnDatabase database;

  @BeforeEach
  void databaseAtV10() {
    database = new OwnDatabase("v11");
    database.migrateTo("10");
  }

  @AfterEach
  void dropDatabase() {
    database.close();
  }

  @Test
  void theOrdersOfV10StayAndEverythingOnThemWorksThroughTheParents() throws SQLException {
    long twoDaysAgo = OrderIds.firstIdAt(System.currentTimeMillis() - 2 * 86_400_000L);
    try (Connection c = database.connect()) {
      Sql.rows(c, """
          INSERT INTO orders (id, shard, client, user_id, category, status, close_reason, created_at, close_at, paid_at, closed_at)
          SELECT ? + n, n % 64, 'client-' || (n % 3), 'user-' || (n % 50), 'physical',
                 (ARRAY['UNPAID', 'PAID', 'CLOSED'])[n % 3 + 1], CASE WHEN n % 3 = 2 THEN 'ADMIN' END,
                 now() - interval '2 days', now() + interval '1 hour', CASE WHEN n % 3 = 1 THEN now() END,
                 CASE WHEN n % 3 = 2 THEN now() END
          FROM generate_series(1, ?) AS n""", twoDaysAgo, ORDERS);
      Sql.rows(c, "INSERT INTO order_items (order_id, sku, qty) SELECT ? + n, 'SKU-' || (n % 7), 1 + n % 4 FROM generate_series(1, ?) AS n",
          twoDaysAgo, ORDERS);
    }
    List<Map<String, Object>> holdingsBefore = holdings();
    assertThat(holdingsBefore).isNotEmpty();

    database.migrateToNewest();

    try (Connection c = database.connect()) {
      assertThat(one(c, "SELECT relkind::text FROM pg_class WHERE oid = 'orders'::regclass")).isEqualTo("p");
      assertThat(one(c, "SELECT relkind::text FROM pg_class WHERE oid = 'order_items'::regclass")).isEqualTo("p");
      assertThat(count(c, "SELECT count(*) FROM orders")).isEqualTo(ORDERS);
      assertThat(count(c, "SELECT count(*) FROM ONLY orders_p_floor")).isEqualTo(ORDERS);
      assertThat(count(c, "SELECT count(*) FROM order_items_p_floor")).isEqualTo(ORDERS);
      assertThat(holdings()).as("client_holdings as before").isEqualTo(holdingsBefore);
      assertThat(Sql.rows(c, "SELECT indexname FROM pg_indexes WHERE tablename = 'orders' ORDER BY 1").stream()
          .map(r -> r.get("indexname")).toList()).containsExactly("orders_by_client_user", "orders_by_created_time",
          "orders_by_status_deadline", "orders_held_by_shard", "orders_pkey", "orders_unpaid_by_shard_deadline",
          "orders_unpaid_by_user", "orders_unsent_reminders_by_shard");
      assertThat(Sql.rows(c, "SELECT indexname FROM pg_indexes WHERE tablename = 'order_items' ORDER BY 1").stream()
          .map(r -> r.get("indexname")).toList()).containsExactly("order_items_by_sku", "order_items_pkey");
      assertThat(count(c, """
          SELECT count(*) FROM pg_trigger WHERE NOT tgisinternal AND tgrelid IN ('orders'::regclass, 'order_items'::regclass)""")).isEqualTo(4);
      assertThat(count(c, """
          SELECT count(*) FROM pg_inherits WHERE inhparent = 'orders'::regclass""")).as("the floor and 4 days").isEqualTo(5);

      long now = OrderIds.firstIdAt(System.currentTimeMillis());
      long unpaidBefore = count(c, "SELECT coalesce(sum(unpaid), 0) FROM client_holdings WHERE client = 'client-new'");
      Sql.rows(c, """
          WITH o AS (INSERT INTO orders (id, shard, client, user_id, category, status, created_at, close_at)
                     VALUES (?, 1, 'client-new', 'u', 'physical', 'UNPAID', now(), now() + interval '1 hour') RETURNING id)
          INSERT INTO order_items (order_id, sku, qty) SELECT id, 'SKU-1', 5 FROM o""", now);
      assertThat(count(c, "SELECT sum(unpaid) FROM client_holdings WHERE client = 'client-new'")).isEqualTo(unpaidBefore + 1);
      assertThat(count(c, "SELECT sum(units) FROM client_holdings WHERE client = 'client-new'")).isEqualTo(5);
      assertThat(count(c, "SELECT count(*) FROM ONLY orders_p_floor WHERE id = " + now)).as("not in the floor").isZero();
      assertThat(Sql.rows(c, """
          INSERT INTO orders (id, shard, client, user_id, category, status, created_at, close_at)
          VALUES (?, 1, 'client-new', 'u', 'physical', 'UNPAID', now(), now()) ON CONFLICT (id) DO NOTHING RETURNING id""", now))
          .as("ON CONFLICT (id) on the partitioned table").isEmpty();
      Sql.rows(c, "UPDATE orders SET status = 'PAID', paid_at = now() WHERE id = ?", now);
      assertThat(count(c, "SELECT sum(unpaid) FROM client_holdings WHERE client = 'client-new'")).isZero();
      assertThat(count(c, "SELECT sum(units) FROM client_holdings WHERE client = 'client-new'")).isZero();
      Sql.rows(c, "TRUNCATE orders, order_items");
      assertThat(count(c, "SELECT count(*) FROM client_holdings")).as("TRUNCATE through the parent").isZero();
    }
  }

  private List<Map<String, Object>> holdings() {
    try (Connection c = database.connect()) {
      return Sql.rows(c, "SELECT client, sum(unpaid) AS unpaid, sum(units) AS units FROM client_holdings GROUP BY client ORDER BY client");
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  private static Object one(Connection c, String sql) {
    return Sql.rows(c, sql).get(0).values().iterator().next();
  }

  private static long count(Connection c, String sql) {
    return ((Number) one(c, sql)).longValue();
  }
}
