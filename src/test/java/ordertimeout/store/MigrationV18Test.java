package ordertimeout.store;

import ordertimeout.support.Sql;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.SQLException;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * V18 on a database with events: a database of its own is migrated to V17, given positioned events and events waiting
 * for their position, then migrated to V18. The waiting ones, and those written after, are in the dispatcher's queue;
 * the positioned ones are not. (V25 moves the positions out of the outbox: {@link MigrationV25Test}.)
 */
class MigrationV18Test {
  private OwnDatabase database;

  @BeforeEach
  void databaseAtV17() {
    database = new OwnDatabase("v18");
    database.migrateTo("17");
  }

  @AfterEach
  void dropDatabase() {
    database.close();
  }

  @Test
  void theEventsWaitingForAPositionAreQueuedAndTheOthersNot() throws SQLException {
    try (Connection c = database.connect()) {
      Sql.rows(c, "INSERT INTO outbox (order_id, client, type, payload, position) "
          + "SELECT n, 'client-a', 'ORDER_CREATED', '{}', n FROM generate_series(1, 300) AS n");
      Sql.rows(c, "UPDATE outbox_positions SET last_position = 300");
      Sql.rows(c, "INSERT INTO outbox (order_id, client, type, payload) "
          + "SELECT n, 'client-a', 'ORDER_PAID', '{}' FROM generate_series(1, 200) AS n");
    }

    database.migrateTo("18");

    try (Connection c = database.connect()) {
      assertThat(Sql.count(c, """
          SELECT count(*) FROM outbox_pending p JOIN outbox o ON o.event_id = p.event_id
          WHERE o.position IS NULL AND o.type = 'ORDER_PAID'""")).isEqualTo(200);
      assertThat(Sql.count(c, "SELECT count(*) FROM outbox_pending")).as("no positioned event").isEqualTo(200);
      Sql.rows(c, "INSERT INTO outbox (order_id, client, type, payload) "
          + "SELECT n, 'client-a', 'ORDER_CLOSED', '{}' FROM generate_series(1, 5) AS n");
      assertThat(Sql.count(c, "SELECT count(*) FROM outbox_pending p JOIN outbox o ON o.event_id = p.event_id "
          + "WHERE o.type = 'ORDER_CLOSED'")).as("written after the migration").isEqualTo(5);
      assertThat(Sql.count(c, "SELECT count(*) FROM pg_indexes WHERE indexname = 'outbox_unpositioned'")).isZero();
    }
  }

}
