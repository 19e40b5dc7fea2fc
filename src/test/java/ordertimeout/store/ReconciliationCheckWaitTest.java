package ordertimeout.store;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.net.NetClientOptions;
import ordertimeout.config.AppConfig;
import ordertimeout.support.Await;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The reconciliation's check takes one connection of its pool of {@link MaintenanceStore#POOL_SIZE}: while its first
 * statements wait longer than the pool's connection wait (here for a lock on inventory; in production, statements
 * reading every unpaid order's items on a big database), the others do not fail waiting for a connection. The pool's
 * wait is 1 s here instead of {@link Pools#CONNECTION_WAIT_MILLIS}, so that the test takes seconds.
 */
class ReconciliationCheckWaitTest {
  private static final long CONNECTION_WAIT_MILLIS = 1000;
  private static final long HELD_MILLIS = 3000;
  private Vertx vertx;
  private MaintenanceStore store;

  @BeforeEach
  void start() {
    TestDatabase.reset();
    vertx = Vertx.vertx();
    store = new MaintenanceStore(Pools.shared(vertx, "reconciliation-check-wait", TestDatabase.connectOptions(),
        MaintenanceStore.POOL_SIZE, 1, new AppConfig.PoolWaits(30_000, 30_000, AppConfig.PoolWaits.UNBOUNDED),
        CONNECTION_WAIT_MILLIS, new NetClientOptions()));
  }

  @AfterEach
  void stop() {
    TestService.await(vertx.close());
  }

  @Test
  void aCheckWaitingLongerThanTheConnectionWaitStillAnswers() throws Exception {
    Sql.execute("INSERT INTO inventory (sku, available, reserved) VALUES ('sku-held', 5, 0)");
    Future<MaintenanceStore.Check> check;
    try (Connection holder = TestDatabase.jdbc()) {
      holder.setAutoCommit(false);
      Sql.rows(holder, "LOCK TABLE inventory IN ACCESS EXCLUSIVE MODE");
      check = store.check(60, 10);
      Await.until("the check to wait for the lock", Duration.ofSeconds(10), () -> Sql.count("SELECT count(*) "
          + "FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()") >= 1);
      Await.sleep(HELD_MILLIS);
      assertThat(check.isComplete()).as("the check, while inventory is locked (%s)", check.cause()).isFalse();
      holder.commit();
    }
    MaintenanceStore.Check done = TestService.await(check);
    assertThat(done.skusChecked()).isEqualTo(1);
    assertThat(done.differencesTotal()).isZero();
    assertThat(done.overdueUnpaid()).isZero();
    assertThat(done.parkedOrders()).isZero();
  }
}
