package ordertimeout;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.vertx.core.Future;
import io.vertx.core.eventbus.DeliveryOptions;
import ordertimeout.bus.Addresses;
import ordertimeout.bus.DueOrders;
import ordertimeout.support.Await;
import ordertimeout.support.Invariants;
import ordertimeout.support.SeedOrders;
import ordertimeout.support.Sql;
import ordertimeout.support.StockRowLock;
import ordertimeout.support.TestDatabase;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.fail;

/**
 * The drain on SIGTERM when a close batch does not finish within {@code drain.timeoutSeconds}: the
 * node says so in its log, cancels the statement that holds the batch and closes, all while the batch's
 * stock row is still locked: the drain keeps its bound. The batch's transaction never commits, so its
 * orders stay UNPAID, with their stock reserved, and the next node to start closes them.
 *
 * <p>The batch is held in flight by the test, which keeps the orders' stock row locked; it is handed to
 * the close verticle as the wheel does. The orders are written straight into the database once the
 * first node has loaded its wheel (which never has them), and the sweep's grace keeps the sweep away,
 * so the next node closes them by the wheel it loads at start.
 */
class DrainTimeoutTest {
  private static final String SKU = "SKU-DRAIN-LATE";
  private static final Duration SAFETY = Duration.ofSeconds(60);
  private static final Map<String, String> SETTINGS = Map.of(
      "OT_DRAIN_TIMEOUT_SECONDS", "1",
      "OT_SWEEP_GRACE_SECONDS", "3600");

  @Test
  void aDrainThatRunsOutOfTimeSaysSoEndsWhileTheBatchIsStillHeldAndTheNextNodeClosesItsOrders() {
    TestDatabase.reset();
    long[] ids;
    long stuck;
    // closed on every path, after the lock is released: closing its pools waits for the statement the lock holds
    try (TestService first = TestService.start(SETTINGS)) {
      ids = seedOrders();
      ListAppender<ILoggingEvent> serviceLog = captureServiceLog();
      try (StockRowLock lock = StockRowLock.hold(SKU)) {
        stuck = handOverHeldBatch(first, ids);

        Future<Void> drained = first.service().drain();
        awaitWithin(drained, SAFETY,
            "the drain, which gives the batch in flight 1 s, while the batch's row is still locked");
        assertThat(drained.succeeded()).isTrue();
        assertThat(warnings(serviceLog)).as("the drain said it gave up waiting").anyMatch(line ->
            line.contains("close batches still in flight after 1 s") && line.contains("stay UNPAID"));
        assertThatThrownBy(() -> first.api().get("/health/live", null)).as("the node closed")
            .isInstanceOf(UncheckedIOException.class);
        assertThat(StockRowLock.waitingBackends()).as("the batch's statement no longer waits for the row")
            .doesNotContain(stuck);
        assertThat(Sql.count("SELECT count(*) FROM orders WHERE status = 'UNPAID'")).isEqualTo(ids.length);
      } finally {
        stopCapturing(serviceLog);
      }
    }

    Await.until("the closed node's backend gone", SAFETY,
        () -> Sql.count("SELECT count(*) FROM pg_stat_activity WHERE pid = ?::int", stuck) == 0);
    assertThat(Sql.count("SELECT count(*) FROM orders WHERE status = 'UNPAID'")).as("the batch never committed").isEqualTo(ids.length);
    assertThat(Sql.count("SELECT count(*) FROM order_log WHERE event = 'CLOSED'")).isZero();
    assertThat(Sql.count("SELECT count(*) FROM outbox WHERE type = 'ORDER_CLOSED'")).isZero();
    assertThat(Sql.count("SELECT reserved FROM stock WHERE sku = ?", SKU)).as("their stock still reserved")
        .isEqualTo(ids.length);

    try (TestService next = TestService.start(SETTINGS)) {
      Await.until("the next node to close the orders left unpaid, by the wheel it loaded", SAFETY,
          () -> next.service().stats().timeoutCloses(DueOrders.Path.WHEEL) == ids.length);
      assertThat(Sql.count("SELECT count(*) FROM orders WHERE status = 'CLOSED' AND close_reason = 'TIMEOUT'")).isEqualTo(ids.length);
      assertThat(next.api().stock(SKU).getLong("reserved")).isZero();
      Invariants.assertHold();
    }
  }

  /** Orders due a second ago, written after the node loaded its wheel: only the batch the test hands over closes them. */
  private static long[] seedOrders() {
    long[] ids = SeedOrders.idsInShard(12, 3);
    SeedOrders.insert(SKU, ids, -1000, 0, null);
    return ids;
  }

  /** Hands the orders to the close verticle as the wheel does, and returns the backend of its transaction, held by the lock. */
  private static long handOverHeldBatch(TestService node, long[] ids) {
    node.vertx().eventBus().request(Addresses.CLOSE_DUE, new DueOrders(ids, DueOrders.Path.WHEEL),
        new DeliveryOptions().setSendTimeout(SAFETY.toMillis()));
    return StockRowLock.awaitWaitingBackend(Set.of(), SAFETY);
  }

  private static ListAppender<ILoggingEvent> captureServiceLog() {
    ListAppender<ILoggingEvent> log = new ListAppender<>();
    log.start();
    ((Logger) LoggerFactory.getLogger(Service.class)).addAppender(log);
    return log;
  }

  private static void stopCapturing(ListAppender<ILoggingEvent> log) {
    ((Logger) LoggerFactory.getLogger(Service.class)).detachAppender(log);
  }

  private static void awaitWithin(Future<?> future, Duration timeout, String what) {
    try {
      future.toCompletionStage().toCompletableFuture().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      fail("not done within " + timeout + ": " + what);
    } catch (Exception e) {
      throw new AssertionError(what + " failed", e);
    }
  }

  private static List<String> warnings(ListAppender<ILoggingEvent> log) {
    return List.copyOf(log.list).stream().filter(event -> event.getLevel() == Level.WARN)
        .map(ILoggingEvent::getFormattedMessage).toList();
  }
}
