package ordertimeout.close;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.VerticleBase;
import io.vertx.core.eventbus.EventBus;
import io.vertx.core.eventbus.Message;
import io.vertx.pgclient.PgConnectOptions;
import ordertimeout.bus.Addresses;
import ordertimeout.bus.DueOrders;
import ordertimeout.bus.PermitGrant;
import ordertimeout.bus.PermitRequest;
import ordertimeout.config.AppConfig;
import ordertimeout.limit.LimiterVerticle;
import ordertimeout.order.Deadlines;
import ordertimeout.stats.ServiceStats;
import ordertimeout.store.DeadlineStore;
import ordertimeout.store.Pools;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Queue;
import java.util.function.Function;

/**
 * Closes due orders and sends due reminders, one transaction per batch, at most
 * {@code close.maxInFlight} transactions at once. A failed batch is retried with exponential backoff;
 * after {@code close.maxAttempts} it is counted and left to the sweep. Replies to a request with the
 * number of orders closed (or reminded).
 */
public final class CloseVerticle extends VerticleBase {
  private static final Logger log = LoggerFactory.getLogger(CloseVerticle.class);

  private enum Kind { CLOSE, REMIND }

  /** {@code message} is null for the part of a batch deferred by the rate limit: nobody waits for it. */
  private record Job(Kind kind, DueOrders.Path path, long[] ids, Message<DueOrders> message) {
    static Job of(Kind kind, Message<DueOrders> message) {
      return new Job(kind, message.body().path(), message.body().orderIds(), message);
    }

    Job withIds(long[] someIds, Message<DueOrders> replyTo) {
      return new Job(kind, path, someIds, replyTo);
    }
  }

  private final AppConfig config;
  private final PgConnectOptions connectOptions;
  private final ServiceStats stats;
  private final Queue<Job> waiting = new ArrayDeque<>();
  private DeadlineStore store;
  private int inFlight;

  public CloseVerticle(AppConfig config, PgConnectOptions connectOptions, ServiceStats stats) {
    this.config = config;
    this.connectOptions = connectOptions;
    this.stats = stats;
  }

  @Override
  public Future<?> start() {
    store = new DeadlineStore(Pools.shared(vertx, connectOptions, config.database().poolSize()));
    EventBus bus = vertx.eventBus();
    return Future.join(
        bus.<DueOrders>consumer(Addresses.CLOSE_DUE, message -> enqueue(Job.of(Kind.CLOSE, message)))
            .completion(),
        bus.<DueOrders>consumer(Addresses.REMIND_DUE, message -> enqueue(Job.of(Kind.REMIND, message)))
            .completion());
  }

  private void enqueue(Job job) {
    if (job.ids().length == 0) {
      reply(job, 0);
      return;
    }
    waiting.add(job);
    runWaiting();
  }

  private void runWaiting() {
    while (inFlight < config.close().maxInFlight() && !waiting.isEmpty()) {
      Job job = waiting.poll();
      inFlight++;
      run(job).onComplete(done -> {
        inFlight--;
        runWaiting();
      });
    }
  }

  private Future<Void> run(Job job) {
    if (job.kind() == Kind.CLOSE && config.limits().closesPerSecond() > 0) {
      return vertx.eventBus()
          .<PermitGrant>request(Addresses.LIMITER_ACQUIRE, new PermitRequest(LimiterVerticle.CLOSES, job.ids().length))
          .compose(reply -> {
            PermitGrant grant = reply.body();
            if (grant.granted() < job.ids().length) {
              long[] later = Arrays.copyOfRange(job.ids(), grant.granted(), job.ids().length);
              vertx.setTimer(grant.retryAfterMillis(), id -> enqueue(job.withIds(later, null)));
            }
            return runNow(job.withIds(Arrays.copyOf(job.ids(), grant.granted()), job.message()));
          });
    }
    return runNow(job);
  }

  private Future<Void> runNow(Job job) {
    if (job.ids().length == 0) {
      reply(job, 0);
      return Future.succeededFuture();
    }
    Future<Integer> done = job.kind() == Kind.CLOSE
        ? withRetries(job.ids(), store::closeDue, 1).map(batch -> {
            stats.timeoutClosed(job.path(), batch.latenessMillis());
            putBack(batch.notYetDue());
            return batch.closedIds().length;
          })
        : withRetries(job.ids(), store::remindDue, 1).map(batch -> {
            stats.remindersSent(batch.reminded());
            putBack(batch.notYetDue());
            return batch.reminded();
          });
    return done
        .onSuccess(count -> reply(job, count))
        .onFailure(failure -> {
          stats.closeBatchGivenUp();
          log.warn("gave up a {} batch of {} orders after {} attempts; the sweep will take them: {}",
              job.kind(), job.ids().length, config.close().maxAttempts(), failure.toString());
          if (job.message() != null) {
            job.message().fail(500, failure.getMessage());
          }
        })
        .mapEmpty();
  }

  private <T> Future<T> withRetries(long[] ids, Function<long[], Future<T>> attempt, int attemptNumber) {
    return attempt.apply(ids).recover(failure -> {
      if (attemptNumber >= config.close().maxAttempts()) {
        return Future.failedFuture(failure);
      }
      stats.closeRetried();
      long backoff = (long) config.close().backoffMillis() << (attemptNumber - 1);
      log.debug("retrying a batch of {} in {} ms: {}", ids.length, backoff, failure.toString());
      Promise<T> retried = Promise.promise();
      vertx.setTimer(backoff, id -> withRetries(ids, attempt, attemptNumber + 1).onComplete(retried));
      return retried.future();
    });
  }

  /** The database clock says these are not due yet: back into the wheel. */
  private void putBack(Deadlines notYetDue) {
    if (notYetDue.size() > 0) {
      vertx.eventBus().send(Addresses.TIMER_SCHEDULE, notYetDue);
    }
  }

  private static void reply(Job job, int count) {
    if (job.message() != null && job.message().replyAddress() != null) {
      job.message().reply(count);
    }
  }
}
