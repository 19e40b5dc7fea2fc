package ordertimeout.store;

import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLWarning;
import java.sql.Statement;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The client_holdings status trigger (count_status_changes) keeps one plan per session, made on the session's first
 * call for the size of that call's transition tables (V11). Its join of the before and after tables must not be a nested
 * loop: planned for the few rows of a first pay, a nested loop then ran every later close batch in time growing with the
 * square of its size (a batch of 4,000 orders: 709 ms against 100-111 ms; V12). The plan is read from auto_explain,
 * sent to this session as notices, for a 4,000-order close after a first change of 3 orders on the same session.
 */
class StatusTriggerPlanTest {
  private static final int BATCH = 4000;

  @AfterEach
  void empty() {
    TestDatabase.reset();
  }

  @Test
  void aLargeCloseAfterASmallFirstChangeJoinsTheTransitionTablesByHashOrMerge() throws SQLException {
    TestDatabase.reset();
    Sql.execute("""
        INSERT INTO orders (id, shard, client, user_id, category, status, created_at, close_at)
        SELECT n, n % 64, 'client-a', 'user-' || n, 'physical', 'UNPAID', now(), now() + interval '1 hour'
        FROM generate_series(1, ?) AS n""", BATCH + 3);
    Sql.execute("INSERT INTO order_items (order_id, sku, qty) SELECT n, 'SKU-1', 2 FROM generate_series(1, ?) AS n", BATCH + 3);
    Sql.execute("ANALYZE orders");
    Sql.execute("ANALYZE order_items");

    try (Connection session = TestDatabase.jdbc(); Statement statement = session.createStatement()) {
      statement.execute("UPDATE orders SET status = 'PAID', paid_at = now() WHERE id > " + BATCH); // the session's first: 3 rows
      statement.execute("LOAD 'auto_explain'");
      statement.execute("SET auto_explain.log_min_duration = 0");
      statement.execute("SET auto_explain.log_nested_statements = on");
      statement.execute("SET auto_explain.log_level = notice");
      statement.execute("SET client_min_messages = notice");
      statement.clearWarnings();
      statement.execute("UPDATE orders SET status = 'CLOSED', close_reason = 'TIMEOUT', closed_at = now() WHERE id <= " + BATCH);
      String triggerPlan = plans(statement.getWarnings());

      assertThat(triggerPlan).as("the trigger's plan, as auto_explain sent it").contains("INSERT INTO client_holdings");
      assertThat(triggerPlan).as("the before and after tables joined by hash or merge")
          .containsAnyOf("Hash Cond: (n.id = o.id)", "Hash Cond: (o.id = n.id)", "Merge Cond: (n.id = o.id)", "Merge Cond: (o.id = n.id)");
    }
    assertThat(Sql.count("SELECT coalesce(sum(unpaid), 0) FROM client_holdings WHERE client = 'client-a'"))
        .as("every order counted out of the unpaid ones").isZero();
  }

  /** The auto_explain notices that carry the trigger's statement. */
  private static String plans(SQLWarning warnings) {
    StringBuilder plans = new StringBuilder();
    for (SQLWarning warning = warnings; warning != null; warning = warning.getNextWarning()) {
      if (warning.getMessage().contains("client_holdings")) {
        plans.append(warning.getMessage()).append('\n');
      }
    }
    return plans.toString();
  }
}
