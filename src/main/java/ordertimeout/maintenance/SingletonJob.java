package ordertimeout.maintenance;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import ordertimeout.config.AppConfig;
import ordertimeout.metrics.Meters;
import ordertimeout.redis.RedisClient;
import ordertimeout.redis.RedisHealth;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.function.Supplier;

/**
 * A periodic job that, with Redis on, runs on one node of the cluster per interval. Every node keeps its
 * own timer; at each tick a node tries the job's {@link JobLock} ({@code <keyPrefix>:lock:<job>}):
 * <ul>
 *   <li>taken: the node runs the job, renewing the lease ({@code redis.lockTtlSeconds}) every third of it
 *   so that a long run keeps the lock, and a node that dies mid-run frees it within one lease. Each run takes the
 *   lock with a token of its own: a run that lost its lease, and the run of a later tick that took the lock again
 *   meanwhile, each renew and release only their own. After a run
 *   that succeeded the node keeps the lock until {@value #CLAIM_PERCENT}% of an interval after the run
 *   started (the interval's run is done: the other nodes, whose timers tick at other moments, skip), and
 *   it keeps no lock after a failed run (another node may try at its next tick);</li>
 *   <li>held by another node: the node skips this tick (one DEBUG line);</li>
 *   <li>Redis unreachable: the node runs the job anyway ({@code ordertimeout_redis_fallbacks_total{operation="lock"}}):
 *   the lock only avoids duplicate work, the jobs are safe to run on several nodes at once.</li>
 * </ul>
 * Each tick counts in {@value Meters#JOB_RUNS}{job, outcome}. Use from one verticle's context.
 */
public final class SingletonJob {
  static final int CLAIM_PERCENT = 90;
  private static final Logger log = LoggerFactory.getLogger(SingletonJob.class);

  public enum Outcome {
    /** Ran holding the lock, or with Redis off. */
    RAN,
    /** Another node held the lock. */
    SKIPPED,
    /** Redis was unreachable: ran without the lock. */
    RAN_WITHOUT_LOCK;

    String tag() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /** A run's hold of the lock: its token's lock and the timer renewing it. */
  private static final class Lease {
    private final JobLock lock;
    private long renewTimer = -1;
    private boolean lostLogged;

    private Lease(JobLock lock) {
      this.lock = lock;
    }
  }

  private final Vertx vertx;
  private final String job;
  private final long intervalMillis;
  private final RedisHealth health;
  private final RedisClient redis;
  private final String lockKey;
  private final String nodeToken;
  private final long leaseMillis;
  private final Map<Outcome, Counter> runs = new EnumMap<>(Outcome.class);
  /** The leases of this node's runs going on now. */
  private final Set<Lease> held = new HashSet<>();
  private boolean running;

  private SingletonJob(Vertx vertx, String job, long intervalMillis, RedisHealth health, RedisClient redis,
                       String lockKey, String nodeToken, MeterRegistry registry) {
    this.vertx = vertx;
    this.job = job;
    this.intervalMillis = intervalMillis;
    this.health = health;
    this.redis = redis;
    this.lockKey = lockKey;
    this.nodeToken = nodeToken;
    this.leaseMillis = health == null ? 0 : health.config().lockTtlSeconds() * 1000L;
    for (Outcome outcome : Outcome.values()) {
      runs.put(outcome, Counter.builder(Meters.JOB_RUNS)
          .description("Ticks of a periodic singleton job on this node, by outcome (ran, skipped: another node "
              + "held its lock, ran_without_lock: Redis was unreachable)")
          .tag("job", job)
          .tag("outcome", outcome.tag())
          .register(registry));
    }
  }

  /**
   * The job {@code job} ticking every {@code intervalMillis} on this node; {@code health} is null when
   * Redis is off (then every tick runs). Call from the verticle's start.
   */
  public static SingletonJob create(Vertx vertx, String job, long intervalMillis, int nodeId, RedisHealth health,
                                    MeterRegistry registry) {
    if (health == null) {
      return new SingletonJob(vertx, job, intervalMillis, null, null, null, null, registry);
    }
    AppConfig.Redis config = health.config();
    return new SingletonJob(vertx, job, intervalMillis, health, new RedisClient(vertx, config),
        config.keyPrefix() + ":lock:" + job, "node-" + nodeId, registry);
  }

  /**
   * A tick of a job whose runs may outlast its interval: skipped (empty) while this node's previous run of it is still
   * going, else {@link #run}.
   */
  public <T> Future<Optional<T>> runUnlessRunning(Supplier<Future<T>> work) {
    if (running) {
      return Future.succeededFuture(Optional.empty());
    }
    running = true;
    return run(work).onComplete(done -> running = false);
  }

  /** One tick: the job's result, or empty when another node has this interval's run. */
  public <T> Future<Optional<T>> run(Supplier<Future<T>> work) {
    if (redis == null) {
      count(Outcome.RAN);
      return start(work).map(Optional::of);
    }
    JobLock lock = new JobLock(redis, lockKey, nodeToken + "-" + UUID.randomUUID());
    return lock.tryAcquire(leaseMillis).transform(acquired -> {
      if (acquired.failed()) {
        health.failed(RedisHealth.LOCK, acquired.cause());
        health.fellBack(RedisHealth.LOCK);
        count(Outcome.RAN_WITHOUT_LOCK);
        log.debug("{} runs without its lock: redis unreachable ({})", job, acquired.cause().toString());
        return start(work).map(Optional::of);
      }
      health.succeeded();
      if (!acquired.result()) {
        count(Outcome.SKIPPED);
        if (!log.isDebugEnabled()) {
          return Future.succeededFuture(Optional.<T>empty());
        }
        return lock.holder() // only to say who holds it: a Redis round trip per skipped tick otherwise
            .onComplete(holder -> log.debug("{} skipped on this node: {} is held by {}", job, lock.key(),
                holder.succeeded() ? holder.result() : "(unknown: " + holder.cause() + ")"))
            .transform(ignored -> Future.succeededFuture(Optional.<T>empty()));
      }
      count(Outcome.RAN);
      return runHolding(new Lease(lock), work);
    });
  }

  private <T> Future<Optional<T>> runHolding(Lease lease, Supplier<Future<T>> work) {
    long startedAt = System.nanoTime();
    JobLock lock = lease.lock;
    held.add(lease);
    lease.renewTimer = vertx.setPeriodic(Math.max(1, leaseMillis / 3), id -> renew(lease));
    return start(work).transform(done -> {
      vertx.cancelTimer(lease.renewTimer);
      held.remove(lease);
      long claimMillis = intervalMillis * CLAIM_PERCENT / 100 - (System.nanoTime() - startedAt) / 1_000_000;
      Future<Boolean> after = done.succeeded() && claimMillis > 0 ? lock.renew(claimMillis) : lock.release();
      return after
          .onFailure(failure -> log.debug("{}: could not keep or release {} after the run: {}", job, lock.key(), failure.toString()))
          .transform(ignored -> done.succeeded() ? Future.succeededFuture(Optional.of(done.result())) : Future.failedFuture(done.cause()));
    });
  }

  private void renew(Lease lease) {
    lease.lock.renew(leaseMillis).onComplete(renewed -> {
      if (held.contains(lease) && !lease.lostLogged && (renewed.failed() || !renewed.result())) {
        lease.lostLogged = true;
        log.warn("{} could not renew its lock {} ({}): another node may run the job at the same time, which costs "
                + "duplicate work only", job, lockKey,
            renewed.failed() ? renewed.cause().toString() : "its lease had run out");
      }
    });
  }

  private static <T> Future<T> start(Supplier<Future<T>> work) {
    try {
      return work.get();
    } catch (RuntimeException e) {
      return Future.failedFuture(e);
    }
  }

  private void count(Outcome outcome) {
    runs.get(outcome).increment();
  }

  public long runs(Outcome outcome) {
    return (long) runs.get(outcome).count();
  }

  /** Frees the lock if a run holds it now (a run interrupted by the stop may be redone elsewhere), and closes the client. */
  public Future<Void> close() {
    if (redis == null) {
      return Future.succeededFuture();
    }
    List<Future<Boolean>> released = new ArrayList<>();
    for (Lease lease : held) {
      vertx.cancelTimer(lease.renewTimer);
      released.add(lease.lock.release());
    }
    held.clear();
    return Future.join(released).transform(ignored -> redis.close());
  }
}
