package ordertimeout.store;

import io.vertx.core.Vertx;
import io.vertx.pgclient.PgBuilder;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.PoolOptions;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import ordertimeout.config.AppConfig;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The dispatcher takes the events waiting for a feed position from outbox_pending (V18), which every statement writing
 * events fills: in event id order, each once, and the queue keeps only what waits, so the dispatcher's read costs the
 * same after a million events as after the first (it walked every event positioned since the outbox's last vacuum
 * when it read a partial index of outbox).
 */
class DispatchQueueTest {
  private Vertx vertx;
  private Pool pool;
  private EventStore events;

  @BeforeEach
  void start() {
    TestDatabase.reset();
    vertx = Vertx.vertx();
    pool = PgBuilder.pool().with(new PoolOptions().setMaxSize(1)).connectingTo(TestDatabase.connectOptions()).using(vertx).build();
    events = EventStore.on(pool);
  }

  @AfterEach
  void stop() {
    TestService.await(vertx.close());
    Sql.executeDdl("ALTER TABLE outbox_pending RESET (autovacuum_enabled)");
    TestDatabase.reset();
  }

  @Test
  void eventsGetPositionsInIdOrderAndThosePositionedOrDeletedElsewhereOnlyLeaveTheQueue() {
    insertEvents(5);
    List<Long> ids = Sql.rows("SELECT event_id FROM outbox ORDER BY event_id").stream()
        .map(row -> ((Number) row.get("event_id")).longValue()).toList();
    assertThat(Sql.count("SELECT count(*) FROM outbox_pending")).as("every event written is queued").isEqualTo(5);
    long last = Sql.count("SELECT last_position FROM outbox_positions");
    // the second event is positioned already (queued again by hand after a restore); retention deletes the fourth
    Sql.execute("INSERT INTO outbox_feed (event_id, position, client) VALUES (?, ?, 'client-a')", ids.get(1), last + 1);
    Sql.execute("UPDATE outbox_positions SET last_position = ?", last + 1);
    Sql.execute("DELETE FROM outbox WHERE event_id = ?", ids.get(3));

    assertThat(TestService.await(events.dispatch(100, List.of()))).as("all five taken off the queue").isEqualTo(5);

    assertThat(position(ids.get(0))).isEqualTo(last + 2);
    assertThat(position(ids.get(1))).as("not positioned twice").isEqualTo(last + 1);
    assertThat(position(ids.get(2))).isEqualTo(last + 3);
    assertThat(position(ids.get(4))).isEqualTo(last + 4);
    assertThat(Sql.count("SELECT last_position FROM outbox_positions")).as("no position skipped").isEqualTo(last + 4);
    assertThat(Sql.count("SELECT count(*) FROM outbox_pending")).isZero();
    assertThat(TestService.await(events.dispatch(100, List.of()))).isZero();
  }

  /**
   * With no event waiting, a round is its lock and nothing else: the dispatch statement is not sent (ten rounds a
   * second on every node, whatever the traffic).
   */
  @Test
  void aRoundWithNoEventWaitingSendsNoDispatchStatement() {
    assertThat(TestService.await(events.dispatch(100, List.of()))).isZero();
    assertThat(TestService.await(events.dispatch(100, List.of()))).isZero();
    assertThat(dispatchStatementsPrepared()).as("the dispatch statement with nothing queued").isZero();
    insertEvents(1);
    assertThat(TestService.await(events.dispatch(100, List.of()))).isEqualTo(1);
    assertThat(dispatchStatementsPrepared()).as("the dispatch statement with an event queued").isEqualTo(1);
  }

  /**
   * The dispatch statement runs on the session's plan made once (decision 0038), from its first call: planned for its
   * parameters, it spent 1.2 ms planning a call over the partitions of orders (its webhooks' join).
   */
  @Test
  void theDispatchStatementRunsOnThePlanMadeOnce() {
    List<AppConfig.Webhook> webhook =
        List.of(new AppConfig.Webhook("http://127.0.0.1:9/events", "secret", Set.of(), null));
    for (int round = 1; round <= 2; round++) {
      insertEvents(1);
      assertThat(TestService.await(events.dispatch(100, webhook))).isEqualTo(1);
    }
    Row planned = TestService.await(pool.preparedQuery(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1")
        .execute(Tuple.of(ordertimeout.store.Sql.DISPATCH_EVENTS))).iterator().next();
    assertThat(planned.getLong("generic_plans") + " generic, " + planned.getLong("custom_plans") + " custom")
        .as("how the two rounds planned the dispatch statement").isEqualTo("2 generic, 0 custom");
    assertThat(Sql.count("SELECT count(*) FROM webhook_deliveries")).as("a delivery of each event").isEqualTo(2);
  }

  /** How many times this pool's one session prepared the dispatch statement (it keeps what it prepared). */
  private long dispatchStatementsPrepared() {
    return TestService.await(pool.preparedQuery("SELECT count(*) FROM pg_prepared_statements WHERE statement = $1")
        .execute(Tuple.of(ordertimeout.store.Sql.DISPATCH_EVENTS))).iterator().next().getLong(0);
  }

  @Test
  void theDispatchersReadDoesNotGrowWithTheEventsItPositioned() {
    Sql.executeDdl("ALTER TABLE outbox_pending SET (autovacuum_enabled = false)"); // only the dispatcher's vacuum
    insertEvents(1);
    long alone = blocksOfNextDispatch();
    insertEvents(60_000);
    while (TestService.await(events.dispatch(EventStore.VACUUM_QUEUE_AFTER, List.of())) > 0) {
      // every event positioned, the queue vacuumed after each batch
    }
    insertEvents(1);

    long behind60000 = blocksOfNextDispatch();

    System.out.printf("DispatchQueueTest: the dispatcher's statement for one event touched %d buffers alone, %d behind "
        + "60,000 positioned events%n", alone, behind60000);
    // with the partial index of V8 (an entry per positioned event until the outbox is vacuumed): 873 buffers here
    assertThat(behind60000).as("buffers touched, against %d alone", alone).isLessThan(alone + 40);
  }

  /** Buffers the dispatcher's statement touches to position what waits now, in a transaction rolled back. */
  private static long blocksOfNextDispatch() {
    return Sql.buffersTouched(ordertimeout.store.Sql.DISPATCH_EVENTS.replace("$1", "1000").replace("$2", "'{}'")
        .replace("$3", "'{}'").replace("$4", "'{}'"));
  }

  private static long position(long eventId) {
    return Sql.count("SELECT position FROM outbox_feed WHERE event_id = ?", eventId);
  }

  private static void insertEvents(int count) {
    Sql.execute("""
        INSERT INTO outbox (order_id, client, type, payload)
        SELECT n, 'client-a', 'ORDER_CREATED', '{}' FROM generate_series(1, ?) AS n""", count);
  }
}
