package ordertimeout.close;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import ordertimeout.store.DeadlineStore;
import ordertimeout.support.Await;
import ordertimeout.support.SeedOrders;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.function.Supplier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/**
 * A close or reminder batch that waited for a row another transaction held (a due order of the batch) puts its orders
 * not yet due back into the wheel for their own time, not as late as it waited: the database counts how long until
 * they are due from when it answers, not from the start of the batch's transaction. In a cluster the put-back replaces
 * the owner's timer, so a late one would close the order late. The store is driven directly, by this machine's clock,
 * which is the embedded database's.
 */
class PutBackAfterLockWaitTest {
  private static final String SKU = "SKU-PUTBACK";
  /** How long the batch waits for the due order's row. */
  private static final long HELD_MILLIS = 3_000;
  /** From the whole second the orders are seeded in: the order not yet due stays so well after its row is let go. */
  private static final long NOT_DUE_IN_MILLIS = 8_000;
  /** Well under {@link #HELD_MILLIS}, by which a put-back counted from the transaction's start comes late. */
  private static final long TOLERANCE_MILLIS = 1_000;

  /** The batch under test waiting for a lock: a close batch's call of close_due_orders, or a reminder's update. */
  private static final String BATCH_WAITING = """
      SELECT count(*) FROM pg_stat_activity
      WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()
        AND (query LIKE '%close_due_orders(%' OR query LIKE '%UPDATE orders SET reminded_at = now()%')""";

  private Vertx vertx;
  private DeadlineStore store;

  @BeforeEach
  void start() {
    TestDatabase.reset();
    vertx = Vertx.vertx();
    store = TestDatabase.deadlineStore(vertx, 2);
  }

  /** The order not yet due is left unpaid, behind the service's back. */
  @AfterEach
  void stop() {
    TestService.await(vertx.close());
    TestDatabase.reset();
  }

  @Test
  void aCloseBatchThatWaitedForARowPutsBackItsOrderNotYetDueForItsDeadline() throws SQLException {
    long[] ids = SeedOrders.idsInShard(7, 2);
    long notDue = ids[0];
    long due = ids[1];
    SeedOrders.insert(SKU, new long[] {notDue}, NOT_DUE_IN_MILLIS, 0, null);
    SeedOrders.insert(SKU, new long[] {due}, -1_000, 0, null);

    DeadlineStore.ClosedBatch batch = whileRowHeld(due, () -> store.closeDue(ids));

    assertThat(batch.closedIds()).containsExactly(due);
    assertThat(batch.notYetDue().orderIds()).containsExactly(notDue);
    assertThat(batch.notYetDue().closeAtMillis()[0]).as("put back for its deadline, not as late as the batch waited")
        .isCloseTo(millis("close_at", notDue), within(TOLERANCE_MILLIS));
  }

  @Test
  void aReminderBatchThatWaitedForARowPutsBackItsReminderNotYetDueForItsTime() throws SQLException {
    long[] ids = SeedOrders.idsInShard(7, 2);
    long notDue = ids[0];
    long due = ids[1];
    long closeInMillis = 600_000;
    SeedOrders.insert(SKU, new long[] {notDue}, closeInMillis, 0, closeInMillis - NOT_DUE_IN_MILLIS);
    SeedOrders.insert(SKU, new long[] {due}, closeInMillis, 0, closeInMillis + 1_000);

    DeadlineStore.RemindedBatch batch = whileRowHeld(due, () -> store.remindDue(ids));

    assertThat(batch.reminded()).isEqualTo(1);
    assertThat(batch.notYetDue().orderIds()).containsExactly(notDue);
    assertThat(batch.notYetDue().remindAtMillis()[0]).as("put back for its reminder, not as late as the batch waited")
        .isCloseTo(millis("remind_at", notDue), within(TOLERANCE_MILLIS));
  }

  /**
   * The answer of {@code batch}, run while another transaction holds the row of order {@code heldId}: the batch
   * waits {@link #HELD_MILLIS} for it.
   */
  private static <T> T whileRowHeld(long heldId, Supplier<Future<T>> batch) throws SQLException {
    try (Connection operator = TestDatabase.jdbc()) {
      operator.setAutoCommit(false);
      Sql.rows(operator, "SELECT id FROM orders WHERE id = ? FOR UPDATE", heldId);
      Future<T> answer = batch.get();
      Await.until("the batch waiting for the held row", Duration.ofSeconds(10),
          () -> Sql.count(BATCH_WAITING) > 0);
      Await.sleep(HELD_MILLIS);
      operator.rollback();
      return TestService.await(answer);
    }
  }

  /** The database's time of {@code column} of order {@code id}, in epoch milliseconds. */
  private static long millis(String column, long id) {
    return Sql.count("SELECT (extract(epoch FROM " + column + ") * 1000)::bigint FROM orders WHERE id = ?", id);
  }
}
