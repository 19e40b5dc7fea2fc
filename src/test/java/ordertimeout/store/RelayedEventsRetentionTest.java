package ordertimeout.store;

import io.vertx.core.Vertx;
import ordertimeout.config.AppConfig;
import ordertimeout.store.MaintenanceStore.Expired;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * With the Kafka relay on, retention keeps an old event until the relay's mark has passed its position; at the
 * maximum age it deletes it anyway and counts it undelivered. With the relay off the mark does not matter.
 */
class RelayedEventsRetentionTest {
  private Vertx vertx;
  private MaintenanceStore store;
  private long mark;

  @BeforeEach
  void start() {
    TestDatabase.reset();
    vertx = Vertx.vertx();
    store = MaintenanceStore.shared(vertx, TestDatabase.connectOptions(), new AppConfig.PoolWaits(10_000, 30_000, AppConfig.PoolWaits.UNBOUNDED));
    mark = Sql.count("SELECT last_position FROM outbox_relayed");
    insertEvent(1, mark - 1, "now() - interval '2 days'");
    insertEvent(2, mark, "now() - interval '2 days'");
    insertEvent(3, mark + 1, "now() - interval '2 days'");
  }

  @AfterEach
  void stop() {
    TestService.await(vertx.close());
    TestDatabase.reset();
  }

  @Test
  void anOldEventGoesOnceTheRelayPassedIt() {
    int deleted = TestService.await(store.deleteDeliveredEvents(24, 100, true, 0)).deleted();

    assertThat(deleted).as("the events at or before the mark").isEqualTo(2);
    assertThat(Sql.count("SELECT order_id FROM outbox")).as("the one past the mark stays").isEqualTo(3);
    assertThat(Sql.count("SELECT count(*) FROM outbox_feed")).as("the positions of those gone went with them").isEqualTo(1);
  }

  @Test
  void withoutTheRelayTheMarkDoesNotMatter() {
    assertThat(TestService.await(store.deleteDeliveredEvents(24, 100, false, 0)).deleted()).isEqualTo(3);
  }

  @Test
  void atTheMaximumAgeAnEventPastTheMarkGoesAndCountsUndelivered() {
    Expired expired = TestService.await(store.deleteExpiredEvents(1, 100, true));

    assertThat(expired).isEqualTo(new Expired(3, 1));
    assertThat(Sql.count("SELECT count(*) FROM outbox_feed")).as("their positions gone with them").isZero();
  }

  @Test
  void anEventExpiredBeforeItsPositionLeavesTheDispatchersQueueToo() {
    Sql.execute("INSERT INTO outbox (order_id, client, type, payload, created_at) "
        + "VALUES (4, 'client-a', 'ORDER_CREATED', '{}', now() - interval '2 days')");
    assertThat(Sql.count("SELECT count(*) FROM outbox_pending")).isEqualTo(1);

    Expired expired = TestService.await(store.deleteExpiredEvents(1, 100, true));

    assertThat(expired).as("the one without a position undelivered too").isEqualTo(new Expired(4, 2));
    assertThat(Sql.count("SELECT count(*) FROM outbox_pending")).isZero();
  }

  private static void insertEvent(long orderId, long position, String createdAt) {
    Sql.execute("INSERT INTO outbox (order_id, client, type, payload, created_at) VALUES (?, 'client-a', 'ORDER_CREATED', '{}', %s)"
        .formatted(createdAt), orderId);
    Sql.position(Sql.count("SELECT max(event_id) FROM outbox"), position);
  }
}
