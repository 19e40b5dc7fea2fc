package ordertimeout.http;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.pgclient.PgException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.function.Function;

/**
 * Group commit, per intake verticle (one event loop, no locking): a request starts a transaction at once when fewer
 * than {@code inFlight} are running; otherwise it waits and joins the next group, up to {@code maxSize}. An idle
 * service answers a lone request without delay; a busy one shares each transaction and its commit among many.
 *
 * <p>The transaction decides each request of its group on its own: it answers one future per request, in order
 * (still pending for a request it left to a later transaction of its own), and fails as a whole only when nothing of
 * it was committed. The next group may start once it has answered. A deadlock or serialisation failure (SQLSTATE class 40)
 * rolled the whole group back, so it is run once more.
 */
final class GroupCommit<R, T> {
  private static final Logger log = LoggerFactory.getLogger(GroupCommit.class);
  private record Waiting<R, T>(R request, Promise<T> answer) {}

  private final Function<List<R>, Future<List<Future<T>>>> transaction;
  private final int maxSize;
  private final int inFlight;
  private final Queue<Waiting<R, T>> waiting = new ArrayDeque<>();
  private int running;

  GroupCommit(int maxSize, int inFlight, Function<List<R>, Future<List<Future<T>>>> transaction) {
    this.transaction = transaction;
    this.maxSize = maxSize;
    this.inFlight = inFlight;
  }

  Future<T> submit(R request) {
    Promise<T> answer = Promise.promise();
    waiting.add(new Waiting<>(request, answer));
    startGroups();
    return answer.future();
  }

  private void startGroups() {
    while (running < inFlight && !waiting.isEmpty()) {
      List<Waiting<R, T>> group = new ArrayList<>(Math.min(maxSize, waiting.size()));
      List<R> requests = new ArrayList<>(Math.min(maxSize, waiting.size()));
      while (group.size() < maxSize && !waiting.isEmpty()) {
        Waiting<R, T> next = waiting.poll();
        group.add(next);
        requests.add(next.request());
      }
      running++;
      runRetryingConflicts(requests, true)
          .onSuccess(results -> {
            for (int i = 0; i < group.size(); i++) {
              Promise<T> answer = group.get(i).answer();
              try {
                results.get(i).onComplete(answer::handle);
              } catch (RuntimeException e) { // one request's handler must not leave the rest of its group unanswered
                log.error("answering a request of a group failed", e);
              }
            }
          })
          .onFailure(failure -> group.forEach(w -> w.answer().fail(failure)))
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
