package ordertimeout.close;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.VerticleBase;
import io.vertx.core.eventbus.EventBus;
import io.vertx.core.eventbus.Message;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.pgclient.PgException;
import io.vertx.sqlclient.Pool;
import ordertimeout.bus.Addresses;
import ordertimeout.bus.Deadlines;
import ordertimeout.bus.DueOrders;
import ordertimeout.bus.PermitGrant;
import ordertimeout.bus.PermitRequest;
import ordertimeout.config.AppConfig;
import ordertimeout.limit.LimiterVerticle;
import ordertimeout.metrics.NodeStats;
import ordertimeout.store.CloseFailures;
import ordertimeout.store.DeadlineStore;
import ordertimeout.store.DeadlineStore.ClosedBatch;
import ordertimeout.store.Pools;
import ordertimeout.store.SqlStates;
import ordertimeout.store.StatusCache;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Queue;
import java.util.Set;
import java.util.function.Function;

/**
 * Closes due orders and sends due reminders, one transaction per batch, at most {@code close.maxInFlight}
 * transactions at once, fewer while batches queue and creates are slow ({@code close.yieldToCreatesAboveMillis}).
 * A failed batch is retried with exponential backoff; a batch that the database keeps refusing for its data (a
 * constraint, a trigger) is split in halves down to single orders, so that one bad order cannot hold back a thousand
 * good ones.
 * What still fails is counted and left to the sweep (closes) or put back into the wheel (reminders). A single
 * order whose close the database refused for its data is counted against that order in PostgreSQL
 * ({@link CloseFailures}); at {@code close.parkAfterFailures} it is parked: the wheel and the sweep leave it alone
 * until an admin retries it, instead of failing again every sweep interval.
 * Replies to a request with the number of orders closed (or reminded).
 */
public final class CloseVerticle extends VerticleBase {
  private static final Logger log = LoggerFactory.getLogger(CloseVerticle.class);
  /** How often the closes look at the creates' latency while they may yield; they grow back by one a second. */
  private static final long YIELD_CHECK_MILLIS = 100;
  private static final int CHECKS_PER_SECOND = 10;
  /** Past this many, the orders found held are forgotten: their batches wait for their rows once more. */
  private static final int ROWS_FOUND_HELD_KEPT = 10_000;

  private enum Kind { CLOSE, REMIND }

  /** {@code queuedAtMillis}: node clock. */
  private record Job(Kind kind, DueOrders.Path path, Message<DueOrders> message, long queuedAtMillis) {}

  private final AppConfig config;
  private final PgConnectOptions connectOptions;
  private final NodeStats stats;
  private final StatusCache statusCache;
  private final Queue<Job> waiting = new ArrayDeque<>();
  /** Due orders whose row another transaction held at their last close: their batches do not wait for it. */
  private final Set<Long> rowsFoundHeld = new HashSet<>();
  private final List<Promise<Void>> idleWaiters = new ArrayList<>();
  private DeadlineStore store;
  private CloseFailures failures;
  private int inFlight;
  /** close.maxInFlight, or fewer while creates are slow. */
  private int allowedInFlight;
  private long yieldTimer = -1;
  /** Yield checks since the closes last yielded or grew. */
  private int checksSinceChange;
  /** Creates answered between consecutive yield checks, the last ten of them: a ring indexed by {@code checks}. */
  private final long[] createsPerCheck = new long[CHECKS_PER_SECOND];
  private long checks;
  private boolean stopped;
  /** The drain started: jobs stop waiting for close permits. */
  private boolean draining;
  private final Set<Promise<Void>> permitWaits = new HashSet<>();

  /** {@code statusCache}: keeps the orders of each close batch closed, or forgets them. */
  public CloseVerticle(AppConfig config, PgConnectOptions connectOptions, NodeStats stats, StatusCache statusCache) {
    this.config = config;
    this.connectOptions = connectOptions;
    this.stats = stats;
    this.statusCache = statusCache;
  }

  @Override
  public Future<?> start() {
    Pool pool = Pools.shared(vertx, Pools.DEADLINES, connectOptions, config.database().poolSize(), 1, config.database().deadlines());
    store = new DeadlineStore(pool, config.node().wallClock(), statusCache);
    failures = new CloseFailures(pool);
    allowedInFlight = config.close().maxInFlight();
    stats.closeConcurrency(allowedInFlight);
    if (config.close().yieldToCreatesAboveMillis() > 0) {
      stats.countCreatesSlowerThan(Duration.ofMillis(config.close().yieldToCreatesAboveMillis()));
      yieldTimer = vertx.setPeriodic(YIELD_CHECK_MILLIS, id -> yieldToCreates());
    }
    EventBus bus = vertx.eventBus();
    return Future.join(
        bus.<DueOrders>consumer(Addresses.CLOSE_DUE, message -> enqueue(Kind.CLOSE, message)).completion(),
        bus.<DueOrders>consumer(Addresses.REMIND_DUE, message -> enqueue(Kind.REMIND, message)).completion());
  }

  @Override
  public Future<?> stop() {
    vertx.cancelTimer(yieldTimer);
    return Future.succeededFuture();
  }

  /**
   * Every 100 ms: closes and creates share the database's cores, and a storm's drain of thousands of orders a batch
   * slows checkout. While batches wait here and more than 1% of the creates answered since the last check were slow,
   * the closes allowed at once halve (down to one: the drain never stops); otherwise they grow back by one a second.
   * Without a backlog the closes do not yield: small batches do not slow creates, and holding them back only made them
   * late (lateness p99 77-98 ms against 49-52 ms at 450 creates/s in the steady-state benchmark).
   */
  private void yieldToCreates() {
    NodeStats.RecentCreates creates = stats.takeRecentCreates();
    createsPerCheck[(int) (checks++ % CHECKS_PER_SECOND)] = creates.answered();
    checksSinceChange++;
    if (!waiting.isEmpty() && creates.slow() > creates.answered() / 100) {
      setAllowedInFlight(Math.max(1, allowedInFlight / 2));
    } else if (allowedInFlight < config.close().maxInFlight() && checksSinceChange >= CHECKS_PER_SECOND) {
      setAllowedInFlight(allowedInFlight + 1);
      runWaiting();
    }
  }

  private void setAllowedInFlight(int allowed) {
    allowedInFlight = allowed;
    checksSinceChange = 0;
    stats.closeConcurrency(allowed);
  }

  /**
   * A full batch from the wheel while none runs or waits is a storm's first: more follow at once. While creates are
   * coming in, the drain starts with one close at a time and grows by one a second as long as creates stay fast, since
   * batches already running cannot be called back (decision 0024: live creates p50 45 against 58 ms, pays p99 120
   * against 176 ms, the drain unchanged).
   */
  private void enqueue(Kind kind, Message<DueOrders> message) {
    if (yieldTimer != -1 && inFlight == 0 && waiting.isEmpty() && message.body().path() == DueOrders.Path.WHEEL
        && message.body().orderIds().length >= config.timer().batchSize() && createsInTheLastSecond() > 0) {
      setAllowedInFlight(1);
    }
    waiting.add(new Job(kind, message.body().path(), message, config.node().wallClock().millis()));
    runWaiting();
  }

  private long createsInTheLastSecond() {
    return Arrays.stream(createsPerCheck).sum();
  }

  private void runWaiting() {
    while (!stopped && inFlight < allowedInFlight && !waiting.isEmpty()) {
      List<Job> jobs = takeNext();
      Job job = jobs.get(0);
      inFlight++;
      run(job, orderIds(jobs))
          .onSuccess(count -> jobs.forEach(each -> each.message().reply(count)))
          .onFailure(failure -> jobs.forEach(each -> each.message().fail(500, String.valueOf(failure.getMessage()))))
          .onComplete(done -> {
            inFlight--;
            runWaiting();
            completeIdleWaiters();
          });
    }
    stats.closeQueued(waiting.size(), waiting.isEmpty() ? 0 : waiting.peek().queuedAtMillis());
  }

  /**
   * The next job. Behind a batch from the wheel, the wheel's batches of the same kind that queued while
   * every place was taken join it, up to {@code timer.batchSize} ids: a backlog then takes one transaction
   * instead of each batch waiting for a place of its own. The wheel sends without waiting for a reply;
   * the sweep's batches go alone, as it counts what each one closed.
   */
  private List<Job> takeNext() {
    Job first = waiting.poll();
    List<Job> jobs = new ArrayList<>();
    jobs.add(first);
    if (first.path() != DueOrders.Path.WHEEL) {
      return jobs;
    }
    int ids = first.message().body().orderIds().length;
    for (Iterator<Job> queued = waiting.iterator(); queued.hasNext(); ) {
      Job next = queued.next();
      if (next.kind() != first.kind() || next.path() != DueOrders.Path.WHEEL) {
        continue;
      }
      int size = next.message().body().orderIds().length;
      if (ids + size > config.timer().batchSize()) {
        break;
      }
      queued.remove();
      jobs.add(next);
      ids += size;
    }
    return jobs;
  }

  private static long[] orderIds(List<Job> jobs) {
    if (jobs.size() == 1) {
      return jobs.get(0).message().body().orderIds();
    }
    return jobs.stream().flatMapToLong(job -> Arrays.stream(job.message().body().orderIds())).toArray();
  }

  /**
   * The drain on shutdown: completes once no batch runs or waits here. A job waiting for close permits stops waiting
   * from now on (at a low close rate they may not come before the drain's deadline): its orders not closed yet stay
   * UNPAID for the sweep or the next node.
   */
  public Future<Void> drain() {
    Promise<Void> idle = Promise.promise();
    context.runOnContext(now -> {
      draining = true;
      List.copyOf(permitWaits).forEach(Promise::tryComplete);
      idleWaiters.add(idle);
      completeIdleWaiters();
    });
    return idle.future();
  }

  /**
   * The drain's end: no batch starts here any more and none is retried, so that a batch whose statement is cancelled
   * ends (its orders stay UNPAID for the sweep or the next node).
   */
  public Future<Void> stopRetrying() {
    Promise<Void> done = Promise.promise();
    context.runOnContext(now -> {
      stopped = true;
      done.complete();
    });
    return done.future();
  }

  private void completeIdleWaiters() {
    if (inFlight == 0 && waiting.isEmpty() && !idleWaiters.isEmpty()) {
      idleWaiters.forEach(Promise::tryComplete);
      idleWaiters.clear();
    }
  }

  /**
   * Runs the whole job, holding its in-flight place while it waits for close permits ({@link #drain} ends the wait).
   */
  private Future<Integer> run(Job job, long[] ids) {
    if (ids.length == 0) {
      return Future.succeededFuture(0);
    }
    if (job.kind() == Kind.REMIND || config.limits().closesPerSecond() <= 0) {
      return runBatch(job, ids);
    }
    return vertx.eventBus()
        .<PermitGrant>request(Addresses.LIMITER_ACQUIRE, new PermitRequest(LimiterVerticle.CLOSES, ids.length))
        .compose(reply -> {
          PermitGrant grant = reply.body();
          long[] now = Arrays.copyOf(ids, grant.granted());
          long[] later = Arrays.copyOfRange(ids, grant.granted(), ids.length);
          return runBatch(job, now).compose(closedNow -> {
            giveBackUnused(now.length - closedNow);
            if (later.length == 0) {
              return Future.succeededFuture(closedNow);
            }
            return waitForPermits(grant.retryAfterMillis())
                .compose(waited -> draining ? Future.succeededFuture(0) : run(job, later))
                .map(closedLater -> closedNow + closedLater);
          });
        });
  }

  /**
   * Gives back the permits of the ids a batch did not close: the compare-and-set found them closed or paid already
   * (the sweep hands on pages of orders the wheel has queued too), not due yet (back into the wheel, which asks
   * again), or their batch was given up (the sweep asks again). Only the closes count against the limit.
   */
  private void giveBackUnused(int permits) {
    if (permits > 0) {
      vertx.eventBus().send(Addresses.LIMITER_REFUND, new PermitRequest(LimiterVerticle.CLOSES, permits));
    }
  }

  private Future<Integer> runBatch(Job job, long[] ids) {
    if (ids.length == 0) {
      return Future.succeededFuture(0);
    }
    Future<Integer> done = job.kind() == Kind.CLOSE
        ? withRetries(ids, this::closeDue, 1).map(batch -> {
            stats.timeoutClosed(job.path(), batch.latenessMillis(), batch.heldLatenessMillis());
            putBack(batch.notYetDue());
            return batch.closedIds().length;
          })
        : withRetries(ids, store::remindDue, 1).map(batch -> {
            stats.remindersSent(batch.reminded());
            putBack(batch.notYetDue());
            return batch.reminded();
          });
    return done.recover(failure -> {
      if (ids.length > 1 && isRefusedForItsData(failure)) {
        int half = ids.length / 2;
        return runBatch(job, Arrays.copyOf(ids, half))
            .compose(first -> runBatch(job, Arrays.copyOfRange(ids, half, ids.length)).map(second -> first + second));
      }
      giveUp(job, ids, failure);
      if (job.kind() == Kind.CLOSE && ids.length == 1 && isRefusedForItsData(failure)) {
        return countFailure(ids[0], failure).map(0);
      }
      return Future.succeededFuture(0);
    });
  }

  /**
   * A batch's close. When its lock wait runs out (55P03: an order's row held by another transaction, such as an
   * operator's open one), the same batch again, closing the orders whose rows are free without waiting for the others:
   * one held order must not keep its whole batch open. A held one stays overdue and unpaid, so the sweep brings it
   * back every pass; a batch with an order found held before goes the second way at once, without waiting for the
   * lock again.
   */
  private Future<ClosedBatch> closeDue(long[] ids) {
    if (!rowsFoundHeld.isEmpty() && Arrays.stream(ids).anyMatch(rowsFoundHeld::contains)) {
      return closeDueLeavingHeldRows(ids);
    }
    return store.closeDue(ids).recover(failure -> {
      if (!SqlStates.is(failure, SqlStates.LOCK_NOT_AVAILABLE)) {
        return Future.failedFuture(failure);
      }
      log.info("a close batch of {} orders waited past its lock wait for a row held by another transaction; closing "
          + "those whose rows are free, leaving the held ones to the sweep", ids.length);
      return closeDueLeavingHeldRows(ids);
    });
  }

  private Future<ClosedBatch> closeDueLeavingHeldRows(long[] ids) {
    return store.closeDueLeavingHeldRows(ids).onSuccess(batch -> {
      for (long id : ids) {
        rowsFoundHeld.remove(id);
      }
      if (rowsFoundHeld.size() + batch.rowsHeld().length > ROWS_FOUND_HELD_KEPT) {
        rowsFoundHeld.clear(); // those paid or cancelled meanwhile never come back to be taken out
      }
      for (long id : batch.rowsHeld()) {
        rowsFoundHeld.add(id);
      }
    });
  }

  /** Counts the failed close against the order, which parks it at {@code close.parkAfterFailures}; never fails. */
  private Future<Void> countFailure(long orderId, Throwable failure) {
    int parkAfter = config.close().parkAfterFailures();
    return failures.record(orderId, failure.toString(), parkAfter)
        .onSuccess(counted -> {
          if (counted.parkedNow()) {
            stats.orderParked();
            log.warn("parked order {} after {} failed closes; it waits for POST /v1/admin/orders/{}/retry: {}",
                orderId, counted.failures(), orderId, failure.toString());
          }
        })
        .onFailure(unrecorded -> log.warn("could not count the failed close of order {}: {}", orderId, unrecorded.toString()))
        .<Void>mapEmpty()
        .otherwiseEmpty();
  }

  private void giveUp(Job job, long[] ids, Throwable failure) {
    stats.closeBatchGivenUp();
    if (job.kind() == Kind.CLOSE) {
      log.warn("gave up closing {} orders {}; the sweep will take them: {}",
          ids.length, stopped ? "on the drain" : "after " + config.close().maxAttempts() + " attempts", failure.toString());
    } else {
      long retryAt = config.node().wallClock().millis() + config.sweep().intervalSeconds() * 1000L;
      long[] none = new long[ids.length];
      long[] retry = new long[ids.length];
      Arrays.fill(none, Deadlines.NONE);
      Arrays.fill(retry, retryAt);
      putBack(new Deadlines(ids, none, retry));
      log.warn("gave up sending {} reminders after {} attempts; they go back into the wheel: {}",
          ids.length, config.close().maxAttempts(), failure.toString());
    }
  }

  /** Constraint violations and raised errors fail the same way on every attempt; connection trouble does not. */
  private static boolean isRefusedForItsData(Throwable failure) {
    if (failure instanceof PgException pg && pg.getSqlState() != null) {
      return pg.getSqlState().startsWith("23") || pg.getSqlState().startsWith("P0");
    }
    return false;
  }

  private <T> Future<T> withRetries(long[] ids, Function<long[], Future<T>> attempt, int attemptNumber) {
    return attempt.apply(ids).recover(failure -> {
      if (stopped || attemptNumber >= config.close().maxAttempts()) {
        return Future.failedFuture(failure);
      }
      stats.closeRetried();
      long backoff = (long) config.close().backoffMillis() << (attemptNumber - 1);
      log.debug("retrying a batch of {} in {} ms: {}", ids.length, backoff, failure.toString());
      return delay(backoff).compose(waited -> withRetries(ids, attempt, attemptNumber + 1));
    });
  }

  /** Until the permits refill, or the drain starts. */
  private Future<Void> waitForPermits(long millis) {
    if (draining) {
      return Future.succeededFuture();
    }
    Promise<Void> refilled = Promise.promise();
    long timer = vertx.setTimer(Math.max(1, millis), id -> refilled.tryComplete());
    permitWaits.add(refilled);
    return refilled.future().onComplete(done -> {
      vertx.cancelTimer(timer);
      permitWaits.remove(refilled);
    });
  }

  private Future<Void> delay(long millis) {
    Promise<Void> elapsed = Promise.promise();
    vertx.setTimer(Math.max(1, millis), id -> elapsed.complete());
    return elapsed.future();
  }

  /** Back into the wheel: the database clock says these are not due yet, or a reminder must be retried. */
  private void putBack(Deadlines deadlines) {
    if (deadlines.size() > 0) {
      vertx.eventBus().send(Addresses.TIMER_SCHEDULE, deadlines);
    }
  }
}
