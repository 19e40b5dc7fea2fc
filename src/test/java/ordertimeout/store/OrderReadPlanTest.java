package ordertimeout.store;

import ordertimeout.support.AutoExplain;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The status read (order_view, migration V13) is planned once per session. A plan made while the orders' partitions
 * were empty must still find an order by its key once they fill, not read a partition whole on every call: the plan of
 * a read after 20,000 orders went in on the same session is read from auto_explain, sent to this session as notices.
 */
class OrderReadPlanTest {
  private static final int ORDERS = 20_000;

  @AfterEach
  void empty() {
    TestDatabase.reset();
  }

  @Test
  void aReadPlannedOnEmptyTablesFindsItsOrderByKeyOnceTheyFill() throws SQLException {
    TestDatabase.reset();
    Sql.execute("ANALYZE orders");
    Sql.execute("ANALYZE order_items");
    try (Connection session = TestDatabase.jdbc(); Statement statement = session.createStatement()) {
      statement.execute("SELECT * FROM order_view(1, NULL)"); // the session's plan, made on empty partitions
      long firstId = Sql.count("SELECT order_id_at(now())"); // in today's partition
      Sql.execute("""
          INSERT INTO orders (id, shard, client, user_id, category, status, created_at, close_at)
          SELECT ?::bigint + n, n % 64, 'client-a', 'user-' || n, 'physical', 'UNPAID', now(), now() + interval '1 hour'
          FROM generate_series(1, ?) AS n""", firstId, ORDERS);
      Sql.execute("INSERT INTO order_items (order_id, sku, qty) SELECT ?::bigint + n, 'SKU-1', 2 FROM generate_series(1, ?) AS n",
          firstId, ORDERS);
      long wanted = firstId + ORDERS;
      AutoExplain.sendPlansAsNotices(statement);
      try (ResultSet read = statement.executeQuery("SELECT * FROM order_view(" + wanted + ", 'client-a')")) {
        assertThat(read.next()).as("the order read").isTrue();
        assertThat(read.getString("status")).isEqualTo("UNPAID");
        assertThat((Integer[]) read.getArray("qtys").getArray()).containsExactly(2);
      }
      String plan = AutoExplain.plansMentioning(statement.getWarnings(), "JOIN order_items");
      assertThat(plan).as("the read's plan, as auto_explain sent it").contains("FROM orders o JOIN order_items i");
      assertThat(plan).as("orders and items found by key in every partition").contains("Index Scan").doesNotContain("Seq Scan");
    }
  }
}
