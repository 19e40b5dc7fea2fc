package ordertimeout.delivery;

import io.vertx.core.Vertx;
import io.vertx.pgclient.PgBuilder;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.PoolOptions;
import ordertimeout.store.EventStore;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A webhook's reads walk its pending deliveries from its cursor (decision 0047): more deliveries than a read looks at
 * that it cannot take (here in backoff) hold back none behind them, those it passed over are taken once due, after a
 * walk met the end and went back to the head, and one an admin sends again behind the cursor within a second.
 */
class DueWalkTest {
  private static final String SINK = "http://127.0.0.1:9/walk";
  private static final int ROOM = 32;
  private static final int[] ALL_SHARDS = IntStream.range(0, TestDatabase.SHARDS).toArray();
  private Vertx vertx;
  private EventStore events;

  @BeforeEach
  void start() {
    TestDatabase.reset();
    vertx = Vertx.vertx();
    Pool pool = PgBuilder.pool().with(new PoolOptions().setMaxSize(1)).connectingTo(TestDatabase.connectOptions())
        .using(vertx).build();
    events = EventStore.on(pool);
  }

  @AfterEach
  void stop() {
    TestService.await(vertx.close());
    TestDatabase.reset();
  }

  @Test
  void deliveriesBehindMoreInBackoffThanAReadLooksAtGoAndThoseInBackoffGoOnceDue() {
    int inBackoff = EventStore.LOOK_AT_MOST + 500;
    Sql.webhookDeliveries(SINK, 1, inBackoff, 0, "now() + interval '1 hour'");
    Sql.webhookDeliveries(SINK, inBackoff + 1, inBackoff + 3, 7, "now()");
    List<Long> positions = positions();
    DueCursor cursor = new DueCursor(0);

    assertThat(read(cursor, 0)).as("the first read looks at %d in backoff", EventStore.LOOK_AT_MOST).isEmpty();
    assertThat(cursor.after()).as("the next goes on after them").isEqualTo(positions.get(EventStore.LOOK_AT_MOST - 1));
    assertThat(read(cursor, 0)).as("the three due behind them").isEqualTo(positions.subList(inBackoff, inBackoff + 3));
    assertThat(cursor.after()).as("that walk met the end: back to the head for those it passed").isZero();

    Sql.execute("UPDATE webhook_deliveries SET next_attempt_at = now() WHERE position <= ?",
        positions.get(inBackoff - 1));
    assertThat(read(cursor, 0)).as("due now: the oldest first").isEqualTo(positions.subList(0, ROOM));
  }

  @Test
  void aFailedDeliverySentAgainBehindTheCursorIsTakenWithinASecond() {
    Sql.webhookDeliveries(SINK, 1, 3, 0, "now()");
    List<Long> positions = positions();
    DueCursor cursor = new DueCursor(0);
    assertThat(read(cursor, 0)).isEqualTo(positions);
    Sql.execute("UPDATE webhook_deliveries SET status = 'FAILED' WHERE position = ?", positions.get(0));
    Sql.execute("UPDATE webhook_deliveries SET status = 'DELIVERED' WHERE position > ?", positions.get(0));
    Sql.webhookDeliveries(SINK, 4, 4, 0, "now()");
    long fourth = positions().get(3);
    assertThat(read(cursor, millis(100))).containsExactly(fourth);
    Sql.execute("UPDATE webhook_deliveries SET status = 'DELIVERED' WHERE position = ?", fourth);
    assertThat(cursor.after()).as("up to the first pending one met").isEqualTo(fourth - 1);

    Sql.execute("UPDATE webhook_deliveries SET status = 'PENDING', next_attempt_at = now() WHERE position = ?",
        positions.get(0)); // as the admin route's retry
    assertThat(read(cursor, millis(500))).as("behind the cursor").isEmpty();
    assertThat(cursor.after()).as("past every position met: none pending after it").isEqualTo(fourth);
    assertThat(read(cursor, millis(1_100))).as("a second after the walk was at the head: back to it").isEmpty();
    assertThat(read(cursor, millis(1_200))).containsExactly(positions.get(0));
  }

  /** A read as the sender's, nothing in flight, at {@code nowNanos}; the positions of the deliveries it took. */
  private List<Long> read(DueCursor cursor, long nowNanos) {
    EventStore.DueRead read = TestService.await(events.due(ALL_SHARDS, new Long[0], new String[] {SINK},
        new Integer[] {ROOM}, new Long[] {cursor.after()}));
    cursor.walked(read.walks().get(SINK), ROOM, nowNanos);
    return read.due().stream().map(due -> due.event().id()).toList();
  }

  /** Every delivery's position (its event id), in order. */
  private static List<Long> positions() {
    return Sql.rows("SELECT position FROM webhook_deliveries ORDER BY position").stream()
        .map(row -> ((Number) row.get("position")).longValue()).toList();
  }

  private static long millis(long millis) {
    return TimeUnit.MILLISECONDS.toNanos(millis);
  }
}
