package ordertimeout.maintenance;

import ordertimeout.config.AppConfig;
import ordertimeout.config.ConfigSource;
import ordertimeout.store.SqlStates;
import ordertimeout.support.Await;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The partitions job's DETACH waits for every transaction on orders and holds up every statement on orders that comes
 * after it while it waits. With the default settings it gives up before a request's own lock wait runs out, so a
 * request that came behind it answers instead of failing {@code row_locked} (the job tries again on its next run).
 */
class PartitionLockWaitTest {
  private static final AppConfig DEFAULTS =
      AppConfig.from(ConfigSource.load(Path.of("conf/application.yaml"), Map.<String, String>of()::get));
  private static final String FAR = "orders_lock_wait_test";

  @BeforeEach
  void aPartitionToDetach() {
    TestDatabase.reset();
    long from = Long.MAX_VALUE - 2_000_000;
    Sql.executeDdl("CREATE TABLE " + FAR + " PARTITION OF orders FOR VALUES FROM (" + from + ") TO ("
        + (from + 1_000_000) + ")");
  }

  @AfterEach
  void dropIt() {
    Sql.executeDdl("DROP TABLE IF EXISTS " + FAR);
    TestDatabase.reset();
  }

  @Test
  void aRequestBehindADetachWaitingForItsLockAnswers() throws Exception {
    try (Connection reader = TestDatabase.jdbc(); Connection job = TestDatabase.jdbc();
         Connection request = TestDatabase.jdbc()) {
      reader.setAutoCommit(false);
      try (Statement read = reader.createStatement()) {
        read.execute("SELECT count(*) FROM orders"); // a transaction on orders, open until the end
      }
      CompletableFuture<SQLException> detached = CompletableFuture.supplyAsync(() -> {
        try (Statement ddl = job.createStatement()) {
          job.setAutoCommit(false);
          ddl.execute("SET LOCAL lock_timeout = " + DEFAULTS.retention().partitions().lockTimeoutMillis());
          ddl.execute("ALTER TABLE orders DETACH PARTITION " + FAR);
          job.rollback();
          return null;
        } catch (SQLException e) {
          return e;
        }
      });
      Await.sleep(50);

      try (Statement statement = request.createStatement()) {
        statement.execute("SET lock_timeout = " + DEFAULTS.database().intake().lockTimeoutMillis());
        try (ResultSet rows = statement.executeQuery("SELECT count(*) FROM orders WHERE id = 1")) {
          assertThat(rows.next()).as("the request answered, after the detach gave up its wait").isTrue();
        }
      }
      SQLException failure = detached.get(10, TimeUnit.SECONDS);
      assertThat((Object) failure).as("the detach gave up waiting for the reader").isNotNull();
      assertThat(failure.getSQLState()).isEqualTo(SqlStates.LOCK_NOT_AVAILABLE);
      reader.rollback();
    }
  }
}
