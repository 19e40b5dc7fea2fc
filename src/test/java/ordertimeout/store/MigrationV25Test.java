package ordertimeout.store;

import ordertimeout.support.Sql;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.SQLException;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * V25 on a database with events: a database of its own is migrated to V24, given positioned events and events waiting
 * for their position, then migrated to V25. The positions move to outbox_feed as they were, with their clients; the
 * waiting events stay queued, and every event written after is queued.
 */
class MigrationV25Test {
  private OwnDatabase database;

  @BeforeEach
  void databaseAtV24() {
    database = new OwnDatabase("v25");
    database.migrateTo("24");
  }

  @AfterEach
  void dropDatabase() {
    database.close();
  }

  @Test
  void positionsMoveToTheFeedAsTheyWereAndWaitingEventsStayQueued() throws SQLException {
    try (Connection c = database.connect()) {
      Sql.rows(c, "INSERT INTO outbox (order_id, client, type, payload, position) "
          + "SELECT n, 'client-' || (n % 3), 'ORDER_CREATED', '{}', 1000 - n FROM generate_series(1, 300) AS n");
      Sql.rows(c, "UPDATE outbox_positions SET last_position = 1000");
      Sql.rows(c, "INSERT INTO outbox (order_id, client, type, payload) "
          + "SELECT n, 'client-a', 'ORDER_PAID', '{}' FROM generate_series(1, 200) AS n");
    }

    database.migrateToNewest();

    try (Connection c = database.connect()) {
      assertThat(Sql.count(c, """
          SELECT count(*) FROM outbox_feed f JOIN outbox o ON o.event_id = f.event_id
          WHERE o.type = 'ORDER_CREATED' AND f.position = 1000 - o.order_id AND f.client = o.client""")).isEqualTo(300);
      assertThat(Sql.count(c, "SELECT count(*) FROM outbox_feed")).as("no waiting event positioned").isEqualTo(300);
      assertThat(Sql.count(c, """
          SELECT count(*) FROM outbox_pending p JOIN outbox o ON o.event_id = p.event_id
          WHERE o.type = 'ORDER_PAID'""")).isEqualTo(200);
      assertThat(Sql.count(c, "SELECT count(*) FROM outbox_pending")).isEqualTo(200);
      Sql.rows(c, "INSERT INTO outbox (order_id, client, type, payload) "
          + "SELECT n, 'client-a', 'ORDER_CLOSED', '{}' FROM generate_series(1, 5) AS n");
      assertThat(Sql.count(c, "SELECT count(*) FROM outbox_pending p JOIN outbox o ON o.event_id = p.event_id "
          + "WHERE o.type = 'ORDER_CLOSED'")).as("written after the migration").isEqualTo(5);
      assertThat(Sql.count(c, """
          SELECT count(*) FROM information_schema.columns
          WHERE table_name = 'outbox' AND column_name = 'position'""")).as("the outbox's column gone").isZero();
      assertThat(Sql.count(c, "SELECT last_position FROM outbox_positions")).isEqualTo(1000);
    }
  }
}
