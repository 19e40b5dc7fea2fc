package ordertimeout.store;

import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A read of a webhook's due deliveries costs what it takes, not the backlog behind it (decision 0047). Before V32 it
 * took every due delivery of the node's shards and sorted them by position for the first 32, and tested each for an
 * earlier pending event of its order: behind a storm's backlog every read, one after each answer, read all of it.
 * Now it walks the webhook's pending deliveries in position order and looks at a bounded number of them, also when
 * they are in backoff (a failing webhook), of another node's shards, or waiting for an earlier event of their order.
 */
class DueDeliveriesReadTest {
  private static final int BACKLOG = 200_000;
  private static final int FEW = 100;
  private static final int ROOM = 32;
  private static final String SINK = "http://127.0.0.1:9/hook";
  private static final String ALL_SHARDS = IntStream.range(0, TestDatabase.SHARDS).mapToObj(Integer::toString)
      .collect(Collectors.joining(","));

  /**
   * Truncated, not deleted: vacuum may not yet remove the rows of an earlier backlog (autovacuum's analyze of the
   * outbox holding them), and a read would step over their index entries.
   */
  @BeforeEach
  @AfterEach
  void reset() {
    Sql.executeDdl("TRUNCATE webhook_deliveries, outbox, outbox_pending, outbox_feed");
    TestDatabase.reset();
  }

  @Test
  void aReadOf32DueDeliveriesCostsWhatItTakesBehindABacklogOf200000() {
    deliveries(1, FEW, 0, "now()");
    long behindFew = buffers(ALL_SHARDS, 0);
    deliveries(FEW + 1, BACKLOG, 0, "now()");

    long behindBacklog = buffers(ALL_SHARDS, 0);

    System.out.printf("DueDeliveriesReadTest: a read of 32 due deliveries touched %d buffers behind %d pending, %d "
        + "behind %,d%n", behindFew, FEW, behindBacklog, BACKLOG);
    // per delivery taken: its index entry and row, a look for an earlier event of its order, its event; the indexes
    // one level deeper than behind a few. Before V32: 9 behind a few, 8,552 behind the backlog.
    assertThat(behindBacklog).as("buffers behind %,d pending, against %d behind %d", BACKLOG, behindFew, FEW)
        .isLessThan(10 * ROOM);
    assertThat(Sql.rows(read(ALL_SHARDS, 0)).stream().filter(row -> (Boolean) row.get("due")).limit(ROOM)
        .map(row -> row.get("position"))).as("the oldest, in position order").containsExactlyElementsOf(
            Sql.rows("SELECT position FROM webhook_deliveries ORDER BY position LIMIT ?", ROOM).stream()
                .map(row -> row.get("position")).toList());
  }

  /**
   * Deliveries a read passes over without taking: those of a failing webhook in backoff, those of another node's
   * shards, and the later events of orders whose earlier one waits in backoff (the walk's cursor past those). A read
   * looks at no more than {@link EventStore#LOOK_AT_MOST} of them, then the next one goes on from there; each costs
   * at most its index entry, its row and a look for an earlier pending event of its order (3 buffers).
   */
  @Test
  void aReadLooksAtABoundedNumberOfTheDeliveriesItPassesOver() {
    Map<String, Long> buffers = new LinkedHashMap<>();
    deliveries(1, BACKLOG, 0, "now() + interval '1 hour'");
    buffers.put("in backoff", buffers(ALL_SHARDS, 0));
    reset();
    deliveries(1, BACKLOG, 1, "now()");
    buffers.put("of another shard", buffers("0", 0));
    reset();
    deliveries(1, BACKLOG, 0, "now() + interval '1 hour'");
    long cursor = Sql.count("SELECT max(position) FROM webhook_deliveries");
    deliveries(1, BACKLOG, 0, "now()");
    buffers.put("waiting for their order", buffers(ALL_SHARDS, cursor));

    System.out.printf("DueDeliveriesReadTest: buffers a read touched over %,d pending it cannot take: %s%n", BACKLOG,
        buffers);
    // before V32: 13, 11 and 8,747 (the first two found by each shard's index of due times, which V32 drops; the
    // third a join over all of them); the third looks at most, an earlier event of its order for each
    assertThat(buffers).allSatisfy((passedOver, read) -> assertThat(read).as(passedOver)
        .isLessThan(4L * EventStore.LOOK_AT_MOST));
    Map<String, Object> last = Sql.rows(read(ALL_SHARDS, cursor)).get(1);
    assertThat(last).as("the last row looked at comes back, not due, for the next read to go on after it")
        .containsEntry("looked", (long) EventStore.LOOK_AT_MOST).containsEntry("due", false)
        .containsEntry("position", cursor + EventStore.LOOK_AT_MOST);
  }

  /**
   * The statistics and the vacuum of a moment with no delivery pending, as after a quiet hour: a partial index vacuumed
   * empty counts as empty until its next vacuum, whatever it holds by then. A read in the middle of a backlog written
   * after them still looks for an earlier pending event of each order by that order (pending_by_order), not along every
   * pending delivery of the webhook before it, as the walk's index without its {@code position > 0} let it: 67,318
   * buffers, and 12,489 a read on average in WebhookBenchmark's drain of 100,000 events.
   */
  @Test
  void aReadPlannedOnStatisticsFromBeforeABacklogLooksForEarlierEventsByTheirOrder() {
    Sql.executeDdl("ALTER TABLE webhook_deliveries SET (autovacuum_enabled = false)");
    try {
      Sql.webhookDeliveries(SINK, BACKLOG + 1, BACKLOG + 1_000, 0, "now()");
      Sql.execute("UPDATE webhook_deliveries SET status = 'DELIVERED'");
      Sql.executeDdl("VACUUM ANALYZE webhook_deliveries");
      Sql.webhookDeliveries(SINK, 1, BACKLOG, 0, "now()");
      long middle = Sql.count("SELECT position FROM webhook_deliveries WHERE status = 'PENDING' ORDER BY position "
          + "OFFSET ? LIMIT 1", BACKLOG / 2);

      long read = buffers(ALL_SHARDS, middle);

      System.out.printf("DueDeliveriesReadTest: a read in the middle of %,d pending, on statistics from before them, "
          + "touched %d buffers%n", BACKLOG, read);
      assertThat(read).isLessThan(10 * ROOM);
    } finally {
      Sql.executeDdl("ALTER TABLE webhook_deliveries RESET (autovacuum_enabled)");
    }
  }

  /** Then vacuumed and analyzed, as autovacuum would after so many. */
  private static void deliveries(int fromOrder, int toOrder, int shard, String nextAttemptAt) {
    Sql.webhookDeliveries(SINK, fromOrder, toOrder, shard, nextAttemptAt);
    Sql.executeDdl("VACUUM ANALYZE webhook_deliveries");
  }

  private static long buffers(String shards, long after) {
    return Sql.buffersTouched(read(shards, after));
  }

  /**
   * The sender's read with room for {@link #ROOM} and nothing in flight, on the shards {@code shards}, after
   * {@code after}.
   */
  private static String read(String shards, long after) {
    return ordertimeout.store.Sql.DUE_DELIVERIES.replace("$1", "'{" + shards + "}'").replace("$2", "'{}'")
        .replace("$3", "'{" + ROOM + "}'").replace("$4", "'{" + SINK + "}'").replace("$5", "'{" + after + "}'")
        .replace("$6", Integer.toString(EventStore.LOOK_AT_MOST));
  }
}
