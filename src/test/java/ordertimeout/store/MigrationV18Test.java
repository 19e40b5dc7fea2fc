package ordertimeout.store;

import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * V18 on a database with events: a database of its own is migrated to V17, given positioned events and events waiting
 * for their position, then migrated to V18. The waiting ones, and those written after, are in the dispatcher's queue;
 * the positioned ones are not.
 */
class MigrationV18Test {
  private final String database = "v18_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
  private String url;

  @BeforeEach
  void databaseAtV17() {
    Sql.execute("CREATE DATABASE " + database);
    DatabaseSetup setup = TestDatabase.get();
    String own = setup.connectOptions().getDatabase();
    url = setup.jdbcUrl().replace("/" + own + "?", "/" + database + "?");
    flyway("17").migrate();
  }

  @AfterEach
  void dropDatabase() {
    Sql.execute("DROP DATABASE IF EXISTS " + database + " WITH (FORCE)");
  }

  @Test
  void theEventsWaitingForAPositionAreQueuedAndTheOthersNot() throws SQLException {
    try (Connection c = connect()) {
      Sql.rows(c, "INSERT INTO outbox (order_id, client, type, payload, position) "
          + "SELECT n, 'client-a', 'ORDER_CREATED', '{}', n FROM generate_series(1, 300) AS n");
      Sql.rows(c, "UPDATE outbox_positions SET last_position = 300");
      Sql.rows(c, "INSERT INTO outbox (order_id, client, type, payload) "
          + "SELECT n, 'client-a', 'ORDER_PAID', '{}' FROM generate_series(1, 200) AS n");
    }

    flyway(null).migrate();

    try (Connection c = connect()) {
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

  private Flyway flyway(String target) {
    var config = Flyway.configure()
        .dataSource(url, TestDatabase.connectOptions().getUser(), TestDatabase.connectOptions().getPassword())
        .locations("classpath:db/migration");
    return (target == null ? config : config.target(target)).load();
  }

  private Connection connect() throws SQLException {
    return DriverManager.getConnection(url, TestDatabase.connectOptions().getUser(), TestDatabase.connectOptions().getPassword());
  }
}
