package ordertimeout.store;

import ordertimeout.support.AutoExplain;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The client_holdings status trigger (count_status_changes, migration V12) keeps one plan per session, made on the
 * session's first call for the size of that call's transition tables. Until V12 it joined its before and after tables,
 * and planned for the few rows of a first pay, the join was a nested loop that ran every later close batch in time
 * growing with the square of its size (a batch of 4,000 orders: 709 ms against 100-111 ms). It now joins nothing.
 */
class StatusTriggerTest {
  private static final int BATCH = 4000;
  private static final int FILLED = 20_000;

  @AfterEach
  void empty() {
    TestDatabase.reset();
  }

  /** The plan is read from auto_explain, sent to this session as notices, for a close of 4,000 after a first pay of 3. */
  @Test
  void aLargeCloseAfterASmallFirstChangeJoinsNothing() throws SQLException {
    TestDatabase.reset();
    insertUnpaid(1, BATCH + 3, "client-a");
    Sql.execute("ANALYZE orders");
    Sql.execute("ANALYZE order_items");

    try (Connection session = TestDatabase.jdbc(); Statement statement = session.createStatement()) {
      statement.execute("UPDATE orders SET status = 'PAID', paid_at = now() WHERE id > " + BATCH); // the session's first: 3 rows
      AutoExplain.sendPlansAsNotices(statement);
      statement.execute("UPDATE orders SET status = 'CLOSED', close_reason = 'TIMEOUT', closed_at = now() WHERE id <= " + BATCH);
      String triggerPlan = AutoExplain.plansMentioning(statement.getWarnings(), "client_holdings");

      assertThat(triggerPlan).as("the trigger's plan, as auto_explain sent it").contains("INSERT INTO client_holdings");
      assertThat(triggerPlan).as("the trigger's plan: each transition table read once, joined to nothing")
          .doesNotContain("Nested Loop").doesNotContain("Join");
    }
    assertThat(Sql.count("SELECT coalesce(sum(unpaid), 0) FROM client_holdings WHERE client = 'client-a'"))
        .as("every order counted out of the unpaid ones").isZero();
  }

  /**
   * A plan made while today's partition held a few orders must still find each order's items by key once it fills,
   * not read the partition whole for every order of a close batch (migration V14): the session's first call pays 3
   * orders, then 20,000 more go in and 4,000 of them close on the same session. Without V14 that close took 10.8 s
   * against 12 ms, until an ANALYZE of the partition (autovacuum's, a minute or more after it starts filling) made the
   * session plan again.
   */
  @Test
  void aPlanMadeOnANearlyEmptyPartitionFindsItemsByKeyOnceItFills() throws SQLException {
    TestDatabase.reset();
    Sql.execute("ANALYZE orders");
    Sql.execute("ANALYZE order_items");
    long firstId = Sql.count("SELECT order_id_at(now())"); // in today's partition
    insertUnpaid(firstId + 1, firstId + 3, "client-a");

    try (Connection session = TestDatabase.jdbc(); Statement statement = session.createStatement()) {
      statement.execute("UPDATE orders SET status = 'PAID', paid_at = now() WHERE id <= " + (firstId + 3)); // the session's plan
      insertUnpaid(firstId + 4, firstId + 3 + FILLED, "client-a");
      AutoExplain.sendPlansAsNotices(statement);
      statement.execute("UPDATE orders SET status = 'CLOSED', close_reason = 'TIMEOUT', closed_at = now() WHERE id > "
          + (firstId + 3) + " AND id <= " + (firstId + 3 + BATCH));
      String triggerPlan = AutoExplain.plansMentioning(statement.getWarnings(), "client_holdings");

      assertThat(triggerPlan).as("the trigger's plan, as auto_explain sent it").contains("INSERT INTO client_holdings");
      assertThat(triggerPlan).as("each order's items found by key in every partition").doesNotContain("Seq Scan on order_items");
    }
    assertThat(Sql.count("SELECT sum(unpaid) FROM client_holdings WHERE client = 'client-a'")).isEqualTo(FILLED - BATCH);
  }

  /** As above for the items' trigger (count_created_items), which looks each new item's order up. */
  @Test
  void theItemsTriggerPlannedOnANearlyEmptyPartitionFindsOrdersByKeyOnceItFills() throws SQLException {
    TestDatabase.reset();
    Sql.execute("ANALYZE orders");
    Sql.execute("ANALYZE order_items");
    long firstId = Sql.count("SELECT order_id_at(now())"); // in today's partition

    try (Connection session = TestDatabase.jdbc(); Statement statement = session.createStatement()) {
      statement.execute(insertOrders(firstId + 1, firstId + 3, "client-a")); // the session's plans
      statement.execute(insertItems(firstId + 1, firstId + 3));
      statement.execute(insertOrders(firstId + 4, firstId + 3 + FILLED, "client-a"));
      AutoExplain.sendPlansAsNotices(statement);
      statement.execute(insertItems(firstId + 4, firstId + 3 + BATCH));
      String triggerPlan = AutoExplain.plansMentioning(statement.getWarnings(), "client_holdings");

      assertThat(triggerPlan).as("the trigger's plan, as auto_explain sent it").contains("INSERT INTO client_holdings");
      assertThat(triggerPlan).as("each item's order found by key in every partition").doesNotContain("Seq Scan on orders");
    }
    assertThat(Sql.count("SELECT sum(units) FROM client_holdings WHERE client = 'client-a'")).isEqualTo(3L * (BATCH + 3));
  }

  /**
   * One statement that closes, pays, moves to another client, only delays, and brings back to unpaid: each client's
   * holdings are what its unpaid orders hold afterwards (3 units an order).
   */
  @Test
  void everyKindOfChangeInOneStatementLeavesEachClientsHoldingsExact() {
    TestDatabase.reset();
    insertUnpaid(1, 50, "client-a");
    insertUnpaid(51, 60, "client-b");
    Sql.execute("UPDATE orders SET status = 'CLOSED', close_reason = 'USER_CANCELLED', closed_at = now() WHERE id BETWEEN 56 AND 60");

    Sql.execute("""
        UPDATE orders SET
          status = CASE WHEN id <= 10 THEN 'CLOSED' WHEN id <= 20 THEN 'PAID' WHEN id > 55 THEN 'UNPAID' ELSE status END,
          close_reason = CASE WHEN id <= 10 THEN 'TIMEOUT' WHEN id > 55 THEN NULL ELSE close_reason END,
          closed_at = CASE WHEN id <= 10 THEN now() WHEN id > 55 THEN NULL ELSE closed_at END,
          paid_at = CASE WHEN id BETWEEN 11 AND 20 THEN now() ELSE paid_at END,
          client = CASE WHEN id BETWEEN 21 AND 30 THEN 'client-b' WHEN id BETWEEN 51 AND 52 THEN 'client-c' ELSE client END,
          close_at = close_at + interval '1 minute'""");

    List<Map<String, Object>> holdings = Sql.rows("""
        SELECT client, sum(unpaid)::bigint AS unpaid, sum(units)::bigint AS units FROM client_holdings
        GROUP BY client HAVING sum(unpaid) <> 0 ORDER BY client""");
    assertThat(holdings).as("a: 50 - 10 closed - 10 paid - 10 moved; b: 5 + 10 moved in - 2 moved out + 5 back; c: 2 moved in")
        .containsExactly(
            Map.of("client", "client-a", "unpaid", 20L, "units", 60L),
            Map.of("client", "client-b", "unpaid", 18L, "units", 54L),
            Map.of("client", "client-c", "unpaid", 2L, "units", 6L));
  }

  /** Unpaid orders {@code first..last} of {@code client}, each with one item of 3 units, counted by the create triggers. */
  private static void insertUnpaid(long first, long last, String client) {
    Sql.execute(insertOrders(first, last, client));
    Sql.execute(insertItems(first, last));
  }

  private static String insertOrders(long first, long last, String client) {
    return "INSERT INTO orders (id, shard, client, user_id, category, status, created_at, close_at) "
        + "SELECT n, n % 64, '" + client + "', 'user-' || n, 'physical', 'UNPAID', now(), now() + interval '1 hour' "
        + "FROM generate_series(" + first + "::bigint, " + last + "::bigint) AS n";
  }

  private static String insertItems(long first, long last) {
    return "INSERT INTO order_items (order_id, sku, qty) SELECT n, 'SKU-1', 3 FROM generate_series(" + first + "::bigint, "
        + last + "::bigint) AS n";
  }
}
