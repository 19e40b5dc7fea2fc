package ordertimeout.store;

import io.vertx.core.Vertx;
import ordertimeout.store.OpsStore.OutboxBacklog;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The outbox backlog that the monitor reads every {@code metrics.outboxRefreshSeconds} is counted up to
 * {@link OpsStore#OUTBOX_BACKLOG_COUNTED_UP_TO} rows: with Kafka off nothing publishes the events, and a count of every
 * row ran past the read's statement timeout in a storm of a million closes, every 5 s, on a PostgreSQL core the closes
 * needed. Below the bound the count is exact; the age is always the oldest unpublished row's.
 */
class OutboxBacklogTest {
  private Vertx vertx;
  private OpsStore store;

  @BeforeEach
  void start() {
    TestDatabase.reset();
    vertx = Vertx.vertx();
    store = OpsStore.shared(vertx, TestDatabase.connectOptions(), 30_000);
  }

  @AfterEach
  void stop() {
    TestService.await(vertx.close());
    TestDatabase.reset();
  }

  @Test
  void aSmallBacklogIsCountedExactlyAndPublishedRowsNeitherCountNorAge() {
    long mark = relayMark();
    insertEvents(3, "now() - interval '10 minutes'", null);
    insertEvents(1, "now() - interval '2 hours'", mark);
    insertEvents(1, "now() - interval '5 minutes'", mark + 1);

    OutboxBacklog backlog = TestService.await(store.outboxBacklog());

    assertThat(backlog.rows()).as("three not positioned, one positioned past the relay's mark").isEqualTo(4);
    assertThat(backlog.oldestAgeSeconds()).as("the oldest unpublished row's age, not the published one's")
        .isBetween(600.0, 660.0);
  }

  @Test
  void anEventDeletedWhileQueuedIsNotTheOldest() {
    insertEvents(1, "now() - interval '2 hours'", null);
    Sql.execute("DELETE FROM outbox"); // as retention does to an event past eventsMaxDays; its queue row stays here
    insertEvents(1, "now() - interval '10 minutes'", null);

    OutboxBacklog backlog = TestService.await(store.outboxBacklog());

    assertThat(backlog.oldestAgeSeconds()).as("the oldest event still there").isBetween(600.0, 660.0);
  }

  @Test
  void aBacklogPastTheBoundReadsAsTheBound() {
    insertEvents(OpsStore.OUTBOX_BACKLOG_COUNTED_UP_TO + 500, "now()", null);
    insertEvents(1, "now() - interval '1 hour'", relayMark() + 1);

    OutboxBacklog backlog = TestService.await(store.outboxBacklog());

    assertThat(backlog.rows()).isEqualTo(OpsStore.OUTBOX_BACKLOG_COUNTED_UP_TO);
    assertThat(backlog.oldestAgeSeconds()).as("the positioned row past the mark is the oldest").isBetween(3600.0, 3660.0);
  }

  private static long relayMark() {
    return Sql.count("SELECT last_position FROM outbox_relayed");
  }

  /** {@code position} null: not positioned yet; otherwise the one position given to the (single) row. */
  private static void insertEvents(int count, String createdAt, Long position) {
    Sql.execute("""
        INSERT INTO outbox (order_id, client, type, payload, created_at)
        SELECT n, 'client-a', 'ORDER_CREATED', '{}', %s FROM generate_series(1, ?) AS n"""
        .formatted(createdAt), count);
    if (position != null) {
      Sql.position(Sql.count("SELECT max(event_id) FROM outbox"), position);
    }
  }
}
