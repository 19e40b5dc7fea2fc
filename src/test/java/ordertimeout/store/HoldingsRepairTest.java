package ordertimeout.store;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
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
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The repair of the clients' counted holdings adds the difference it sees to the counts: two repairs at once (two
 * nodes, or an admin's retry after the answer's deadline) run one after the other, the second seeing the first's, so
 * the difference is added once.
 */
class HoldingsRepairTest {
  private Vertx vertx;
  private MaintenanceStore store;

  @BeforeEach
  void start() {
    TestDatabase.reset();
    vertx = Vertx.vertx();
    store = MaintenanceStore.shared(vertx, TestDatabase.connectOptions(),
        new AppConfig.PoolWaits(10_000, 30_000, AppConfig.PoolWaits.UNBOUNDED));
  }

  @AfterEach
  void stop() {
    TestService.await(vertx.close());
    TestDatabase.reset();
  }

  @Test
  void twoRepairsAtOnceAddTheDifferenceOnce() throws Exception {
    // Counted: 2 unpaid orders holding 3 units; there is no order at all.
    Sql.execute("INSERT INTO client_holdings (client, stripe, unpaid, units) VALUES ('client-drift', 0, 2, 3)");
    Future<List<String>> first;
    Future<List<String>> second;
    try (Connection holder = TestDatabase.jdbc()) {
      holder.setAutoCommit(false);
      Sql.rows(holder, "SELECT * FROM client_holdings WHERE client = 'client-drift' FOR UPDATE");
      first = store.repairClientHoldings();
      second = store.repairClientHoldings();
      Await.until("both repairs waiting", Duration.ofSeconds(10), () -> Sql.count(
          "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()") >= 2);
      holder.commit();
    }
    List<String> repaired = new ArrayList<>(TestService.await(first));
    repaired.addAll(TestService.await(second));

    assertThat(repaired).as("the clients repaired, by both").containsExactly("client-drift");
    assertThat(Sql.rows("SELECT sum(unpaid)::bigint AS unpaid, sum(units)::bigint AS units FROM client_holdings "
        + "WHERE client = 'client-drift'").get(0)).as("the counts")
        .containsEntry("unpaid", 0L).containsEntry("units", 0L);
  }
}
