package ordertimeout.store;

import io.vertx.core.Vertx;
import io.vertx.pgclient.PgConnectOptions;
import ordertimeout.config.AppConfig;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The Kafka relay's transaction waits for the broker's acknowledgements while it holds the relay's mark: a send that
 * succeeds later than the sessions' idle-in-transaction timeout still moves the mark, instead of the session ending
 * under it (and another relay sending the batch again).
 */
class RelayIdleTimeoutTest {
  private static final String SESSION_IDLE_MILLIS = "500";
  private static final long PUBLISH_MILLIS = 1500;

  private Vertx vertx;
  private long mark;

  @BeforeEach
  void start() {
    TestDatabase.reset();
    vertx = Vertx.vertx();
    mark = Sql.count("SELECT last_position FROM outbox_relayed");
  }

  @AfterEach
  void stop() {
    Sql.execute("UPDATE outbox_relayed SET last_position = ?", mark);
    TestService.await(vertx.close());
    TestDatabase.reset();
  }

  @Test
  void aPublishSlowerThanTheSessionsIdleTimeoutStillMovesTheMark() {
    Sql.execute("INSERT INTO outbox (order_id, client, type, payload) VALUES (1, 'client-a', 'ORDER_CREATED', '{}')");
    Sql.position(Sql.count("SELECT max(event_id) FROM outbox"), mark + 1);
    PgConnectOptions sessions = new PgConnectOptions(TestDatabase.connectOptions());
    sessions.addProperty("idle_in_transaction_session_timeout", SESSION_IDLE_MILLIS);
    OutboxStore store = new OutboxStore(Pools.shared(vertx, "relay-idle-timeout-test", sessions, 1, 1,
        new AppConfig.PoolWaits(1000, 5000, AppConfig.PoolWaits.UNBOUNDED)));

    int published = TestService.await(store.publishOldest(10, PUBLISH_MILLIS,
        events -> vertx.timer(PUBLISH_MILLIS, TimeUnit.MILLISECONDS).mapEmpty()));

    assertThat(published).isEqualTo(1);
    assertThat(Sql.count("SELECT last_position FROM outbox_relayed")).as("the mark").isEqualTo(mark + 1);
  }
}
