package ordertimeout.intake;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.pgclient.PgException;
import ordertimeout.config.AppConfig;
import ordertimeout.store.OrderCreates;
import ordertimeout.store.OrderCreates.CreateOutcome;
import ordertimeout.store.OrderCreates.CreateRequest;
import ordertimeout.store.OrderCreates.CreateResult;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;

/**
 * Group commit of creates, per intake verticle (one event loop, no locking): a create starts a
 * transaction at once when fewer than {@code intake.groupsInFlight} are running; otherwise it waits
 * and joins the next group, up to {@code intake.groupMaxSize}. An idle service answers a lone create
 * without delay; a busy one shares each transaction and its commit among many creates.
 */
final class CreateGroups {
  private record Waiting(CreateRequest request, Promise<CreateOutcome> answer) {}

  private final OrderCreates creates;
  private final AppConfig config;
  private final Queue<Waiting> waiting = new ArrayDeque<>();
  private int running;

  CreateGroups(OrderCreates creates, AppConfig config) {
    this.creates = creates;
    this.config = config;
  }

  Future<CreateOutcome> submit(CreateRequest request) {
    Promise<CreateOutcome> answer = Promise.promise();
    waiting.add(new Waiting(request, answer));
    startGroups();
    return answer.future();
  }

  private void startGroups() {
    while (running < config.intake().groupsInFlight() && !waiting.isEmpty()) {
      List<Waiting> group = new ArrayList<>();
      while (group.size() < config.intake().groupMaxSize() && !waiting.isEmpty()) {
        group.add(waiting.poll());
      }
      running++;
      List<CreateRequest> requests = group.stream().map(Waiting::request).toList();
      createRetryingConflicts(requests, true)
          .onSuccess(results -> answer(group, results))
          .onFailure(failure -> group.forEach(w -> w.answer().fail(failure)))
          .onComplete(done -> {
            running--;
            startGroups();
          });
    }
  }

  /** A deadlock or serialisation failure rolled the whole group back: it is safe to run it once more. */
  private Future<List<CreateResult>> createRetryingConflicts(List<CreateRequest> requests, boolean mayRetry) {
    return creates.create(requests, config.orders().maxUnpaidPerUser()).recover(failure -> {
      boolean conflict = failure instanceof PgException pg && pg.getSqlState() != null && pg.getSqlState().startsWith("40");
      return conflict && mayRetry ? createRetryingConflicts(requests, false) : Future.failedFuture(failure);
    });
  }

  private static void answer(List<Waiting> group, List<CreateResult> results) {
    for (int i = 0; i < group.size(); i++) {
      CreateResult result = results.get(i);
      if (result.rejection() != null) {
        group.get(i).answer().fail(result.rejection());
      } else {
        group.get(i).answer().complete(result.outcome());
      }
    }
  }
}
