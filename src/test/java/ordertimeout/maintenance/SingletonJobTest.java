package ordertimeout.maintenance;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import ordertimeout.config.AppConfig;
import ordertimeout.redis.RedisHealth;
import ordertimeout.support.Await;
import ordertimeout.support.TestRedis;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

import static ordertimeout.support.TestService.await;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Periodic singleton jobs on two nodes (two Vert.x instances, each with its own client and token)
 * sharing one real Redis: one run per interval for the cluster, a long run keeps its lock, and without
 * Redis every node runs.
 */
class SingletonJobTest {
  private final List<Vertx> nodes = new ArrayList<>();
  private final List<RedisHealth> healths = new ArrayList<>();
  private TestRedis redis;

  @BeforeEach
  void startRedis() {
    redis = TestRedis.start();
  }

  @AfterEach
  void stopAll() {
    nodes.forEach(vertx -> await(vertx.close()));
    redis.close();
  }

  /** A node's job, created on its own Vert.x; {@code lockTtlSeconds} is the lease while a run goes on. */
  private SingletonJob node(long intervalMillis, int lockTtlSeconds) {
    Vertx vertx = Vertx.vertx();
    nodes.add(vertx);
    RedisHealth health = new RedisHealth(new SimpleMeterRegistry(),
        // a slow answer on a loaded machine is not an outage: with Redis up every tick must reach it
        new AppConfig.Redis(redis.url(), "ot", 5000, AppConfig.WhenUnreachable.LOCAL, lockTtlSeconds));
    healths.add(health);
    Promise<SingletonJob> created = Promise.promise();
    vertx.runOnContext(none -> created.complete(
        SingletonJob.create(vertx, "test-job", intervalMillis, nodes.size(), health, new SimpleMeterRegistry())));
    return await(created.future());
  }

  /** Runs a tick of {@code job} on its node's context. */
  private <T> Optional<T> tick(int node, SingletonJob job, Supplier<Future<T>> work) {
    Promise<Optional<T>> done = Promise.promise();
    nodes.get(node).runOnContext(none -> job.run(work).onComplete(done));
    return await(done.future());
  }

  @Test
  void twoNodesTickingEveryIntervalRunTheJobOncePerIntervalBetweenThem() {
    long interval = 1000;
    SingletonJob a = node(interval, 30);
    SingletonJob b = node(interval, 30);
    AtomicInteger runs = new AtomicInteger();
    // Both nodes tick every interval, b half an interval after a, for a while.
    AtomicBoolean ticking = new AtomicBoolean(true);
    long start = System.nanoTime();
    nodes.get(0).setPeriodic(interval, id -> {
      if (ticking.get()) {
        a.run(() -> Future.succeededFuture(runs.incrementAndGet()));
      }
    });
    nodes.get(1).setTimer(interval / 2, first -> nodes.get(1).setPeriodic(0, interval, id -> {
      if (ticking.get()) {
        b.run(() -> Future.succeededFuture(runs.incrementAndGet()));
      }
    }));
    Await.sleep(6_500);
    ticking.set(false);
    Await.sleep(500); // the last ticks' calls to Redis answer
    await(nodes.get(0).close());
    await(nodes.get(1).close());
    double elapsedMillis = (System.nanoTime() - start) / 1e6;
    nodes.clear();
    long ticks = a.runs(SingletonJob.Outcome.RAN) + a.runs(SingletonJob.Outcome.SKIPPED)
        + b.runs(SingletonJob.Outcome.RAN) + b.runs(SingletonJob.Outcome.SKIPPED);
    // A run keeps the lock until 90% of an interval after it started: runs are at least 900 ms apart.
    long bound = (long) (elapsedMillis / (interval * SingletonJob.CLAIM_PERCENT / 100.0)) + 1;
    assertThat(ticks).as("ticks of both nodes").isGreaterThanOrEqualTo(8);
    assertThat(runs.get()).as("runs in %.0f ms, %d ticks (without the lock every tick would run)", elapsedMillis, ticks)
        .isPositive()
        .isLessThanOrEqualTo((int) bound);
    assertThat(a.runs(SingletonJob.Outcome.RAN) + b.runs(SingletonJob.Outcome.RAN)).isEqualTo(runs.get());
    assertThat(a.runs(SingletonJob.Outcome.SKIPPED) + b.runs(SingletonJob.Outcome.SKIPPED))
        .as("the other node's ticks found the lock taken").isEqualTo(ticks - runs.get());
    assertThat(a.runs(SingletonJob.Outcome.RAN_WITHOUT_LOCK) + b.runs(SingletonJob.Outcome.RAN_WITHOUT_LOCK)).isZero();
  }

  @Test
  void aRunLongerThanTheLeaseKeepsTheLockByRenewingIt() {
    // a lease of 3 s renewed every second: a renewal may come 2 s late on a loaded machine and still be in time
    SingletonJob a = node(60_000, 3);
    SingletonJob b = node(60_000, 3);
    Promise<String> release = Promise.promise();
    Promise<Optional<String>> longRun = Promise.promise();
    nodes.get(0).runOnContext(none -> a.run(() -> release.future()).onComplete(longRun));
    Await.until("a's run under way", Duration.ofSeconds(10), () -> a.runs(SingletonJob.Outcome.RAN) > 0);
    Await.sleep(4_000); // longer than a lease: without its renewals the lock would be gone
    assertThat(redis.command("GET ot:lock:test-job")).as("still a's, renewed").startsWith("node-1-");
    assertThat(tick(1, b, () -> Future.succeededFuture("b ran"))).as("b skips while a runs").isEmpty();
    nodes.get(0).runOnContext(none -> release.complete("a ran"));
    assertThat(await(longRun.future())).contains("a ran");
    long ttl = Long.parseLong(redis.command("PTTL ot:lock:test-job").substring(1));
    assertThat(ttl).as("after the run: kept for the rest of 90% of the interval").isGreaterThan(30_000L).isLessThanOrEqualTo(54_000L);
    assertThat(tick(1, b, () -> Future.succeededFuture("b ran"))).isEmpty();
  }

  /**
   * A run that lost its lease goes on while a later tick on the same node takes the lock again: the first run's end
   * neither releases the second's lock nor stops its renewals.
   */
  @Test
  void aRunThatLostItsLeaseLeavesTheLockOfTheNextRunOnItsNodeAlone() {
    SingletonJob a = node(60_000, 3); // a lease of 3 s renewed every second
    Promise<String> endFirst = Promise.promise();
    Promise<Optional<String>> first = Promise.promise();
    nodes.get(0).runOnContext(none -> a.run(() -> endFirst.future()).onComplete(first));
    Await.until("the first run under way", Duration.ofSeconds(10), () -> a.runs(SingletonJob.Outcome.RAN) == 1);
    redis.command("DEL ot:lock:test-job"); // its lease ran out: a stall, a failover
    Promise<String> endSecond = Promise.promise();
    Promise<Optional<String>> second = Promise.promise();
    nodes.get(0).runOnContext(none -> a.run(() -> endSecond.future()).onComplete(second));
    Await.until("the second run under way", Duration.ofSeconds(10), () -> a.runs(SingletonJob.Outcome.RAN) == 2);
    String secondToken = redis.command("GET ot:lock:test-job");
    assertThat(secondToken).startsWith("node-1-");

    nodes.get(0).runOnContext(none -> endFirst.fail("database away"));
    assertThat(first.future().toCompletionStage().handle((ok, failure) -> failure).toCompletableFuture().join())
        .hasMessageContaining("database away");
    assertThat(redis.command("GET ot:lock:test-job")).as("not released by the first run").isEqualTo(secondToken);
    Await.sleep(4_000); // longer than a lease: without its renewals the second run's lock would be gone
    assertThat(redis.command("GET ot:lock:test-job")).as("still the second run's, renewed").isEqualTo(secondToken);
    nodes.get(0).runOnContext(none -> endSecond.complete("second"));
    assertThat(await(second.future())).contains("second");
  }

  @Test
  void aFailedRunReleasesTheLockSoAnotherNodeMayTryAtItsNextTick() {
    SingletonJob a = node(60_000, 30);
    SingletonJob b = node(60_000, 30);
    Promise<Optional<String>> failed = Promise.promise();
    nodes.get(0).runOnContext(none -> a.<String>run(() -> Future.failedFuture("database away")).onComplete(failed));
    assertThat(failed.future().toCompletionStage().handle((ok, failure) -> failure).toCompletableFuture().join())
        .hasMessageContaining("database away");
    assertThat(redis.command("EXISTS ot:lock:test-job")).isEqualTo(":0");
    assertThat(tick(1, b, () -> Future.succeededFuture("b ran"))).contains("b ran");
  }

  @Test
  void withRedisUnreachableEveryNodeRunsTheJob() {
    SingletonJob a = node(60_000, 30);
    SingletonJob b = node(60_000, 30);
    redis.stop();
    assertThat(tick(0, a, () -> Future.succeededFuture("a ran"))).contains("a ran");
    assertThat(tick(1, b, () -> Future.succeededFuture("b ran"))).contains("b ran");
    assertThat(a.runs(SingletonJob.Outcome.RAN_WITHOUT_LOCK)).isEqualTo(1);
    assertThat(b.runs(SingletonJob.Outcome.RAN_WITHOUT_LOCK)).isEqualTo(1);
    assertThat(healths.get(0).fallbacks(RedisHealth.LOCK)).isEqualTo(1);
    assertThat(healths.get(0).isUp()).isFalse();

    redis.restart();
    assertThat(tick(0, a, () -> Future.succeededFuture("a ran"))).contains("a ran");
    assertThat(a.runs(SingletonJob.Outcome.RAN)).as("with the lock again").isEqualTo(1);
    assertThat(healths.get(0).isUp()).isTrue();
    assertThat(tick(1, b, () -> Future.succeededFuture("b ran"))).isEmpty();
  }

}
