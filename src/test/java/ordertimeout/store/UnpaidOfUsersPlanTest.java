package ordertimeout.store;

import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A create group's per-user count ({@code COUNT_UNPAID_OF_USERS}, migration V12) keeps one plan per session. Made
 * while orders was empty, that plan must still look each user up in orders_unpaid_by_user once the table holds many
 * orders nobody has analyzed yet: a scan kept from an empty table would read every order on every create.
 */
class UnpaidOfUsersPlanTest {
  private static final int ORDERS = 50_000;
  /** The service's statement (this package's Sql, not the test support's), with JDBC's placeholders. */
  private static final String COUNT_UNPAID_OF_USERS =
      ordertimeout.store.Sql.COUNT_UNPAID_OF_USERS.replace("$1", "?").replace("$2", "?");

  @AfterEach
  void empty() {
    Sql.executeDdl("ALTER TABLE orders_p_floor RESET (autovacuum_enabled)");
    TestDatabase.reset();
  }

  @Test
  void countsEachUsersUnpaidOrdersByIndexWithAPlanMadeOnAnEmptyTable() throws SQLException {
    TestDatabase.reset();
    // Autovacuum would analyze the grown table and so make the plan again: this test is about the time before it does.
    // The orders' ids are below today's first, so they are in the floor partition.
    Sql.executeDdl("ALTER TABLE orders_p_floor SET (autovacuum_enabled = off)");
    Sql.execute("ANALYZE orders");
    try (Connection connection = TestDatabase.jdbc()) {
      assertThat(unpaidOf(connection, "user-1")).as("before any order").isEmpty(); // this session's plan, on an empty table
      Sql.execute("""
          INSERT INTO orders (id, shard, client, user_id, category, status, created_at, close_at, paid_at)
          SELECT n, n % 64, 'client-a', 'user-' || (n % 1000), 'physical', CASE WHEN n / 1000 % 2 = 0 THEN 'UNPAID' ELSE 'PAID' END,
                 now(), now() + interval '1 hour', CASE WHEN n / 1000 % 2 = 0 THEN NULL ELSE now() END
          FROM generate_series(1, ?) AS n""", ORDERS);

      connection.setAutoCommit(false);
      long scannedBefore = Sql.sequentialScans(connection, "orders");
      List<Map<String, Object>> counted = unpaidOf(connection, "user-2", "user-3", "user-nobody");
      assertThat(Sql.sequentialScans(connection, "orders") - scannedBefore).as("sequential scans of orders").isZero();
      connection.rollback();

      assertThat(counted).extracting(row -> row.get("user_id") + "=" + row.get("unpaid"))
          .as("user-2 and user-3 have 25 unpaid of their 50 orders each, user-nobody has no order")
          .containsExactlyInAnyOrder("user-2=25", "user-3=25");
    }
  }

  private static List<Map<String, Object>> unpaidOf(Connection connection, String... users) throws SQLException {
    String[] clients = new String[users.length];
    Arrays.fill(clients, "client-a");
    return Sql.rows(connection, COUNT_UNPAID_OF_USERS,
        connection.createArrayOf("text", clients), connection.createArrayOf("text", users));
  }
}
