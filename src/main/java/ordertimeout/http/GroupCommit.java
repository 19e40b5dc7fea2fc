package ordertimeout.http;

import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.pgclient.PgException;
import ordertimeout.metrics.NodeStats;
import ordertimeout.order.OrderRejected;
import ordertimeout.order.OrderRejected.Reason;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Queue;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * Group commit, one per node for creates and one for pays ({@link IntakeGroups}): a request starts a transaction at
 * once when fewer than {@code inFlight} are running; otherwise it waits and joins the next group, up to
 * {@code maxSize}. An idle service answers a lone request without delay; a busy one shares each transaction and its
 * commit among many, whichever intake instance took the request (decision 0030).
 *
 * <p>It lives on the event loop it was made on (no locking): a request submitted on another intake instance's event
 * loop is handed over to it, and its answer handed back to the request's context.
 *
 * <p>The wait is bounded twice: at most {@code maxQueued} requests wait (one more is refused at once), and a request
 * still waiting at its deadline is refused then and never joins a group. Both answer {@link Reason#OVERLOADED}.
 *
 * <p>The transaction decides each request of its group on its own: it answers one future per request, in order
 * (still pending for a request it left to a later transaction of its own), and fails as a whole only when nothing of
 * it was committed. The next group may start once it has answered. A deadlock or serialisation failure (SQLSTATE class 40)
 * rolled the whole group back, so it is run once more.
 */
final class GroupCommit<R, T> {
  private static final Logger log = LoggerFactory.getLogger(GroupCommit.class);

  /** {@code timer} fires at the deadline while the request still waits (none yet: -1). */
  private static final class Waiting<R, T> {
    final R request;
    final Promise<T> answer = Promise.promise();
    final long submittedNanos = System.nanoTime();
    long timer = -1;
    boolean started;
    boolean refused;

    Waiting(R request) {
      this.request = request;
    }
  }

  private final Vertx vertx;
  private final Context context;
  private final Thread eventLoop;
  private final Function<List<R>, Future<List<Future<T>>>> transaction;
  private final int maxSize;
  private final int inFlight;
  private final int maxQueued;
  private final NodeStats.GroupTimers timers;
  private final Queue<Waiting<R, T>> waiting = new ArrayDeque<>();
  /** Of {@link #waiting}, those not refused at their deadline yet. */
  private int queued;
  private int running;

  /** To be made on an event loop: the one it lives on. {@code timers}: each request's wait, each group's transaction. */
  GroupCommit(Vertx vertx, int maxSize, int inFlight, int maxQueued, NodeStats.GroupTimers timers,
              Function<List<R>, Future<List<Future<T>>>> transaction) {
    this.vertx = vertx;
    this.context = vertx.getOrCreateContext();
    this.eventLoop = Thread.currentThread();
    this.transaction = transaction;
    this.maxSize = maxSize;
    this.inFlight = inFlight;
    this.maxQueued = maxQueued;
    this.timers = timers;
  }

  /**
   * {@code decideByNanos}: the {@link System#nanoTime()} past which the request no longer joins a group. Called on
   * an event loop; the answer completes on the caller's context.
   */
  Future<T> submit(R request, long decideByNanos) {
    if (Thread.currentThread() == eventLoop) {
      return submitHere(request, decideByNanos);
    }
    Context caller = Objects.requireNonNull(Vertx.currentContext(), "a request is submitted on an event loop");
    Promise<T> answer = Promise.promise();
    context.runOnContext(handedOver -> submitHere(request, decideByNanos)
        .onComplete(decided -> caller.runOnContext(handedBack -> answer.handle(decided))));
    return answer.future();
  }

  private Future<T> submitHere(R request, long decideByNanos) {
    if (queued >= maxQueued) {
      return Future.failedFuture(new OrderRejected(Reason.OVERLOADED,
          maxQueued + " requests are already waiting for the database on this node; nothing was stored, retry later"));
    }
    Waiting<R, T> entry = new Waiting<>(request);
    waiting.add(entry);
    queued++;
    startGroups();
    if (!entry.started) {
      long delayMillis = Math.max(1, TimeUnit.NANOSECONDS.toMillis(decideByNanos - System.nanoTime()));
      entry.timer = vertx.setTimer(delayMillis, fired -> refuseAtDeadline(entry));
    }
    return entry.answer.future();
  }

  private void refuseAtDeadline(Waiting<R, T> entry) {
    if (entry.started) {
      return; // its group took it; the transaction decides it
    }
    entry.refused = true;
    queued--;
    entry.answer.fail(new OrderRejected(Reason.OVERLOADED,
        "the request waited for the database past its deadline and was not started; nothing was stored, retry later"));
  }

  private void startGroups() {
    while (running < inFlight && queued > 0) {
      List<Waiting<R, T>> group = new ArrayList<>(Math.min(maxSize, queued));
      List<R> requests = new ArrayList<>(Math.min(maxSize, queued));
      while (group.size() < maxSize && !waiting.isEmpty()) {
        Waiting<R, T> next = waiting.poll();
        if (next.refused) {
          continue;
        }
        queued--;
        next.started = true;
        if (next.timer >= 0) {
          vertx.cancelTimer(next.timer);
        }
        group.add(next);
        requests.add(next.request);
      }
      running++;
      long startedNanos = System.nanoTime();
      group.forEach(member -> timers.waitForGroup().record(startedNanos - member.submittedNanos, TimeUnit.NANOSECONDS));
      runRetryingConflicts(requests, true)
          .andThen(done -> timers.transaction().record(System.nanoTime() - startedNanos, TimeUnit.NANOSECONDS))
          .onSuccess(results -> {
            for (int i = 0; i < group.size(); i++) {
              Promise<T> answer = group.get(i).answer;
              try {
                results.get(i).onComplete(answer::handle);
              } catch (RuntimeException e) { // one request's handler must not leave the rest of its group unanswered
                log.error("answering a request of a group failed", e);
              }
            }
          })
          .onFailure(failure -> group.forEach(w -> w.answer.fail(failure)))
          .onComplete(done -> {
            running--;
            startGroups();
          });
    }
  }

  private Future<List<Future<T>>> runRetryingConflicts(List<R> requests, boolean mayRetry) {
    Future<List<Future<T>>> run;
    try {
      run = transaction.apply(requests);
    } catch (RuntimeException e) {
      run = Future.failedFuture(e); // the group's place must be given back whatever happens
    }
    return run.recover(failure -> {
      boolean conflict = failure instanceof PgException pg && pg.getSqlState() != null && pg.getSqlState().startsWith("40");
      return conflict && mayRetry ? runRetryingConflicts(requests, false) : Future.failedFuture(failure);
    });
  }
}
