package ordertimeout.http;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.VerticleBase;
import io.vertx.core.Vertx;
import ordertimeout.metrics.NodeStats;
import ordertimeout.order.OrderRejected;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * One group commit serves the node's intake instances, each on an event loop of its own (decision 0030): the
 * requests of both wait together while a group runs and share the next group, in the order they were submitted; each
 * answer comes back on the event loop of the instance that submitted the request; a request handed over and still
 * waiting at its deadline is refused there and never joins a group. Each request's wait for its group, and each group's
 * transaction, are timed.
 */
class NodeGroupCommitTest {
  private static final long NO_DEADLINE = TimeUnit.MINUTES.toNanos(10);

  private final Vertx vertx = Vertx.vertx();
  /** The requests of each group started, in the order the groups started. */
  private final List<List<String>> started = Collections.synchronizedList(new ArrayList<>());
  /** The groups running; each ends when the test says so. */
  private final BlockingQueue<Running> running = new LinkedBlockingQueue<>();
  private final AtomicInteger atOnce = new AtomicInteger();
  private final AtomicInteger mostAtOnce = new AtomicInteger();
  private final MeterRegistry registry = new SimpleMeterRegistry();
  private final NodeStats.GroupTimers timers =
      new NodeStats.GroupTimers(registry.timer("wait"), registry.timer("transaction"));

  private record Running(Context context, Promise<List<Future<String>>> transaction, List<String> requests) {
    void end() {
      context.runOnContext(v -> transaction.complete(requests.stream().map(request -> Future.succeededFuture(request + " done")).toList()));
    }
  }

  /** An intake instance: an event loop of its own (a verticle's). */
  private final class Instance {
    final String name;
    final Context context;
    final Thread eventLoop;
    /** Requests this instance submitted so far: each gets a name of its own. */
    int submitted;

    Instance(String name) throws Exception {
      this.name = name;
      CompletableFuture<Context> own = new CompletableFuture<>();
      vertx.deployVerticle(new VerticleBase() {
        @Override
        public Future<?> start() {
          own.complete(context);
          return Future.succeededFuture();
        }
      }).await();
      context = own.get(10, TimeUnit.SECONDS);
      eventLoop = onLoop(Thread::currentThread);
    }

    GroupCommit<String, String> makeGroupCommit() throws Exception {
      return onLoop(() -> new GroupCommit<>(vertx, 256, 1, 1024, timers, requests -> {
        started.add(requests);
        mostAtOnce.accumulateAndGet(atOnce.incrementAndGet(), Math::max);
        Promise<List<Future<String>>> transaction = Promise.promise();
        running.add(new Running(Vertx.currentContext(), transaction, requests));
        return transaction.future().onComplete(done -> atOnce.decrementAndGet());
      }));
    }

    /** The answers, each as it completed: its value or failure, and whether on this instance's event loop. */
    List<CompletableFuture<String>> submit(GroupCommit<String, String> groups, int count, long deadlineNanos) throws Exception {
      return onLoop(() -> {
        List<CompletableFuture<String>> answers = new ArrayList<>();
        for (int i = 0; i < count; i++) {
          CompletableFuture<String> answer = new CompletableFuture<>();
          groups.submit(name + submitted++, System.nanoTime() + deadlineNanos).onComplete(decided -> {
            String where = Thread.currentThread() == eventLoop ? "" : " on another thread";
            answer.complete((decided.succeeded() ? decided.result() : decided.cause().getClass().getSimpleName()) + where);
          });
          answers.add(answer);
        }
        return answers;
      });
    }

    <T> T onLoop(Supplier<T> work) throws Exception {
      CompletableFuture<T> done = new CompletableFuture<>();
      context.runOnContext(v -> done.complete(work.get()));
      return done.get(10, TimeUnit.SECONDS);
    }
  }

  @AfterEach
  void close() {
    vertx.close().await();
  }

  @Test
  void theRequestsOfBothInstancesWaitTogetherAndShareTheNextGroup() throws Exception {
    Instance a = new Instance("a");
    Instance b = new Instance("b");
    assertThat(a.eventLoop).as("two event loops").isNotSameAs(b.eventLoop);
    GroupCommit<String, String> groups = a.makeGroupCommit();

    List<CompletableFuture<String>> answers = new ArrayList<>(b.submit(groups, 1, NO_DEADLINE));
    Running first = next();
    answers.addAll(b.submit(groups, 2, NO_DEADLINE));
    answers.addAll(a.submit(groups, 2, NO_DEADLINE));
    answers.addAll(b.submit(groups, 1, NO_DEADLINE));
    a.onLoop(() -> "b's hand-overs, queued on a's loop before this, have run");
    assertThat(started).as("no second group while one runs").containsExactly(List.of("b0"));

    Thread.sleep(100);
    first.end();
    next().end();

    assertThat(started).containsExactly(List.of("b0"), List.of("b1", "b2", "a0", "a1", "b3"));
    assertThat(mostAtOnce).as("groups running at once").hasValue(1);
    assertThat(answers).extracting(answer -> answer.get(10, TimeUnit.SECONDS))
        .as("each answer on its own instance's event loop")
        .containsExactly("b0 done", "b1 done", "b2 done", "a0 done", "a1 done", "b3 done");
    assertThat(timers.waitForGroup().count()).as("every request's wait").isEqualTo(6);
    assertThat(timers.waitForGroup().max(TimeUnit.MILLISECONDS)).as("the second group's wait for the first")
        .isGreaterThanOrEqualTo(100);
    assertThat(timers.transaction().count()).as("each group's transaction").isEqualTo(2);
    assertThat(timers.transaction().max(TimeUnit.MILLISECONDS)).as("the first group ran 100 ms")
        .isGreaterThanOrEqualTo(100);
  }

  @Test
  void aHandedOverRequestStillWaitingAtItsDeadlineIsRefusedOnItsOwnEventLoopAndNeverRuns() throws Exception {
    Instance a = new Instance("a");
    Instance b = new Instance("b");
    GroupCommit<String, String> groups = a.makeGroupCommit();

    a.submit(groups, 1, NO_DEADLINE);
    Running first = next();
    CompletableFuture<String> late = b.submit(groups, 1, TimeUnit.MILLISECONDS.toNanos(50)).get(0);
    assertThat(late.get(10, TimeUnit.SECONDS)).isEqualTo(OrderRejected.class.getSimpleName());

    first.end();
    a.submit(groups, 1, NO_DEADLINE);
    next().end();
    assertThat(started).as("b's request never joined a group").containsExactly(List.of("a0"), List.of("a1"));
  }

  private Running next() throws InterruptedException {
    Running group = running.poll(10, TimeUnit.SECONDS);
    assertThat(group).as("a group started").isNotNull();
    return group;
  }
}
