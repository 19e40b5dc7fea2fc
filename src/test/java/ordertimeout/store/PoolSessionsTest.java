package ordertimeout.store;

import io.vertx.core.Vertx;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Tuple;
import ordertimeout.config.AppConfig;
import ordertimeout.support.Await;
import ordertimeout.support.Sql;
import ordertimeout.support.StockLedger;
import ordertimeout.support.TestDatabase;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What {@link Pools} puts on a session reaches PostgreSQL: each pool's lock and statement timeouts, and on every
 * session its name, the idle-in-transaction timeout and the keepalive; and a session left idle inside its
 * transaction while it holds a row lock (a node paused by GC or SIGSTOP) loses the session and the lock.
 */
class PoolSessionsTest {
  private static final Duration SAFETY = Duration.ofSeconds(60);
  private Vertx vertx;

  @BeforeEach
  void start() {
    TestDatabase.reset();
    vertx = Vertx.vertx();
  }

  @AfterEach
  void stop() {
    TestService.await(vertx.close());
  }

  @Test
  void everySessionCarriesItsPoolsTimeoutsItsNameAndTheKeepalive() {
    AppConfig.Database config = TestDatabase.databaseConfig(Map.of());
    Pool pool = pool(config, config.deadlines());
    Row settings = TestService.await(pool.query("""
        SELECT current_setting('lock_timeout') AS lock, current_setting('statement_timeout') AS statement,
               current_setting('idle_in_transaction_session_timeout') AS idle, current_setting('tcp_keepalives_idle') AS keepalive,
               current_setting('application_name') AS name""").execute()).iterator().next();
    assertThat(settings.getString("lock")).isEqualTo("10s");
    assertThat(settings.getString("statement")).isEqualTo("30s");
    assertThat(settings.getString("idle")).isEqualTo("10s");
    assertThat(settings.getString("keepalive")).isEqualTo("30");
    assertThat(settings.getString("name")).isEqualTo("pool-sessions-test");
  }

  @Test
  void aSessionLeftIdleInItsTransactionLosesItsRowLocks() throws SQLException {
    String sku = "SKU-IDLE-HOLDER";
    Sql.execute("INSERT INTO inventory (sku, available, reserved) VALUES (?, 1, 0)", sku);
    StockLedger.putIn(sku, 1);
    AppConfig.Database config = TestDatabase.databaseConfig(Map.of("OT_DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MILLIS", "500"));
    Pool pool = pool(config, config.intake());
    SqlConnection holder = TestService.await(pool.getConnection());
    TestService.await(holder.begin());
    TestService.await(holder.preparedQuery("SELECT sku FROM inventory WHERE sku = $1 FOR UPDATE").execute(Tuple.of(sku)));

    Await.until("the idle holder's session ended and its row lock with it", SAFETY, () -> lockable(sku));
  }

  private Pool pool(AppConfig.Database config, AppConfig.PoolWaits waits) {
    return Pools.shared(vertx, "pool-sessions-test", Pools.sessionsOf(TestDatabase.connectOptions(), config, "pool-sessions-test"),
        1, 1, waits);
  }

  private static boolean lockable(String sku) {
    try (Connection connection = TestDatabase.jdbc()) {
      connection.setAutoCommit(false);
      try (PreparedStatement lock = connection.prepareStatement("SELECT sku FROM inventory WHERE sku = ? FOR UPDATE NOWAIT")) {
        lock.setString(1, sku);
        lock.execute();
        connection.rollback();
        return true;
      }
    } catch (SQLException e) {
      return false; // 55P03: still held
    }
  }
}
