package ordertimeout.close;

import io.vertx.core.Future;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.Message;
import ordertimeout.bus.Addresses;
import ordertimeout.bus.DueOrders;
import ordertimeout.support.Await;
import ordertimeout.support.SeedOrders;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import ordertimeout.support.StockRowLock;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A close batch whose database connection is cut under it (its backend terminated, as a failover, a
 * restart or an administrator would) fails for no fault of its orders: the close verticle tries the
 * whole batch again on a new connection and never splits it, since splitting down to single orders is
 * for the database refusing an order's data. When every attempt is cut, the batch is given up whole
 * and the sweep closes its orders later.
 *
 * <p>The batch is handed to the close verticle on its own address, as the wheel does, so that it is
 * exactly the test's orders; they are written straight into the database and are not in the wheel,
 * and the sweep's grace keeps the sweep away from them until the test moves their deadlines back.
 * Each attempt's transaction waits for the stock row the test holds locked, where the test finds its
 * backend and terminates it.
 */
class ConnectionCutRetryTest extends ServiceTestBase {
  private static final String SKU = "SKU-CUT";
  private static final int ORDERS = 8;
  private static final int MAX_ATTEMPTS = 3;
  private static final Duration SAFETY = Duration.ofSeconds(60);

  @Override
  protected Map<String, String> overrides() {
    return Map.of(
        "OT_SWEEP_GRACE_SECONDS", "3600",
        "OT_CLOSE_MAX_ATTEMPTS", Integer.toString(MAX_ATTEMPTS));
  }

  @Test
  void aBatchWhoseConnectionIsCutIsRetriedWholeOnANewConnectionAndClosesEveryOrder() {
    long[] ids = SeedOrders.idsInShard(3, ORDERS);
    SeedOrders.insert(SKU, ids, -1000, 0, null);
    long retriesBefore = closeRetries();
    long givenUpBefore = service.service().stats().closeBatchesGivenUp();
    long wheelBefore = service.service().stats().timeoutCloses(DueOrders.Path.WHEEL);

    Future<Message<Integer>> reply;
    long cut;
    long retried;
    try (StockRowLock lock = StockRowLock.hold(SKU)) {
      reply = closeDue(ids);
      cut = nextAttempt(Set.of(), reply, "the first attempt");
      StockRowLock.terminate(cut);
      retried = nextAttempt(Set.of(cut), reply, "a retry after the cut");
      assertThat(StockRowLock.waitingBackends()).as("one transaction at a time: the retry, not halves of the batch")
          .containsExactly(retried);
    }

    int closed = TestService.await(reply).body();
    assertThat(retried).as("the retry ran on another connection").isNotEqualTo(cut);
    assertThat(closed).as("the close verticle's answer: every order of the batch closed").isEqualTo(ORDERS);
    assertThat(Sql.count("SELECT count(*) FROM orders WHERE id = ANY(?) AND status = 'CLOSED' AND close_reason = 'TIMEOUT'",
        (Object) boxed(ids))).isEqualTo(ORDERS);
    assertThat(Sql.count("SELECT count(DISTINCT xmin::text) FROM orders WHERE id = ANY(?)", (Object) boxed(ids)))
        .as("all closed by one transaction: the batch was not split").isEqualTo(1);
    assertThat(closeRetries() - retriesBefore).as("the retry counted, once").isEqualTo(1);
    assertThat(service.service().stats().closeBatchesGivenUp()).as("nothing given up").isEqualTo(givenUpBefore);
    assertThat(service.service().stats().timeoutCloses(DueOrders.Path.WHEEL) - wheelBefore).isEqualTo(ORDERS);
    assertThat(api.stock(SKU).getLong("reserved")).as("the stock given back").isZero();
  }

  @Test
  void aBatchWhoseConnectionIsCutOnEveryAttemptIsGivenUpWholeNotSplitAndTheSweepClosesItsOrders() {
    long[] ids = SeedOrders.idsInShard(4, ORDERS);
    SeedOrders.insert(SKU, ids, -1000, 0, null);
    long retriesBefore = closeRetries();
    long givenUpBefore = service.service().stats().closeBatchesGivenUp();
    long wheelBefore = service.service().stats().timeoutCloses(DueOrders.Path.WHEEL);
    long sweepBefore = service.service().stats().timeoutCloses(DueOrders.Path.SWEEP);

    Future<Message<Integer>> reply;
    Set<Long> cut = new HashSet<>();
    try (StockRowLock lock = StockRowLock.hold(SKU)) {
      reply = closeDue(ids);
      for (int attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
        long backend = nextAttempt(cut, reply, "attempt " + attempt);
        StockRowLock.terminate(backend);
        cut.add(backend);
      }
      // After its last attempt the batch is given up, and answered; a split would start another
      // transaction instead, which would wait for the lock still held here.
      Future<Message<Integer>> answered = reply;
      Await.until("the batch answered, or another transaction started for it", SAFETY,
          () -> answered.isComplete() || StockRowLock.waitingBackends().stream().anyMatch(pid -> !cut.contains(pid)));
      List<Long> more = StockRowLock.waitingBackends().stream().filter(pid -> !cut.contains(pid)).toList();
      assertThat(more).as("no transaction after the %d cut attempts (a split would have started one per half)", MAX_ATTEMPTS)
          .isEmpty();
      assertThat(reply.isComplete()).as("the batch answered while the lock was still held").isTrue();
    }

    assertThat(TestService.await(reply).body()).as("nothing closed").isZero();
    assertThat(closeRetries() - retriesBefore).as("retried whole: %d attempts", MAX_ATTEMPTS).isEqualTo(MAX_ATTEMPTS - 1);
    assertThat(service.service().stats().closeBatchesGivenUp() - givenUpBefore).as("given up once, whole").isEqualTo(1);
    assertThat(service.service().stats().timeoutCloses(DueOrders.Path.WHEEL)).isEqualTo(wheelBefore);
    assertThat(Sql.count("SELECT count(*) FROM orders WHERE id = ANY(?) AND status = 'UNPAID'", (Object) boxed(ids)))
        .as("the cut attempts rolled back").isEqualTo(ORDERS);
    assertThat(api.stock(SKU).getLong("reserved")).isEqualTo(ORDERS);

    // Overdue past the sweep's grace now: the sweep takes what was given up.
    Sql.execute("UPDATE orders SET close_at = close_at - interval '2 hours' WHERE id = ANY(?)", (Object) boxed(ids));
    Await.until("the sweep to close the orders given up", SAFETY,
        () -> service.service().stats().timeoutCloses(DueOrders.Path.SWEEP) - sweepBefore == ORDERS);
    assertThat(Sql.count("SELECT count(*) FROM orders WHERE id = ANY(?) AND status = 'CLOSED'", (Object) boxed(ids))).isEqualTo(ORDERS);
    assertThat(api.stock(SKU).getLong("reserved")).isZero();
  }

  /**
   * The backend of the batch's next attempt, once it waits for the locked stock row (not one of
   * {@code seen}); fails at once if the close verticle answered the batch instead.
   */
  private static long nextAttempt(Set<Long> seen, Future<Message<Integer>> reply, String attempt) {
    Await.until(attempt + " waiting for the locked stock row, or the batch answered", SAFETY,
        () -> reply.isComplete() || StockRowLock.waitingBackends().stream().anyMatch(pid -> !seen.contains(pid)));
    assertThat(reply.isComplete()).as("%s: the close verticle answered the batch instead (%s)", attempt,
        reply.isComplete() ? (reply.succeeded() ? reply.result().body() + " closed" : reply.cause()) : "").isFalse();
    return StockRowLock.waitingBackends().stream().filter(pid -> !seen.contains(pid)).findFirst().orElseThrow();
  }

  /** Hands the batch to the close verticle as the wheel does; the answer is how many it closed. */
  private Future<Message<Integer>> closeDue(long[] ids) {
    return service.vertx().eventBus().request(Addresses.CLOSE_DUE, new DueOrders(ids, DueOrders.Path.WHEEL),
        new DeliveryOptions().setSendTimeout(SAFETY.toMillis()));
  }

  private long closeRetries() {
    return api.stats().getLong("closeRetries");
  }

  private static Long[] boxed(long[] ids) {
    return Arrays.stream(ids).boxed().toArray(Long[]::new);
  }
}
