package ordertimeout.maintenance;

import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.pgclient.PgConnectOptions;
import ordertimeout.config.AppConfig;
import ordertimeout.metrics.NodeStats;
import ordertimeout.redis.RedisHealth;
import ordertimeout.store.MaintenanceStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.function.BiFunction;

/**
 * Retention: every {@code retention.intervalSeconds}, deletes order_log rows older than
 * {@code retention.orderLogHours}, events older than {@code retention.publishedOutboxHours} once every sink that
 * wants them has them (the Kafka relay when on, each matching webhook; the pull feed holds nothing back), every
 * event older than {@code retention.eventsMaxDays} (those some sink did not have are counted in
 * {@code ordertimeout_events_dropped_undelivered_total} and logged) and idempotency keys older than
 * {@code retention.idempotencyKeyHours}, and finished bulk jobs and reconciliation runs older than
 * {@code retention.jobsDays} (never the latest finished run).
 * Each delete looks at most at {@code retention.batchSize} rows, the oldest, in a transaction of its own, and the next
 * batch follows only while the last one found a whole batch old, so no lock is held for long and closes interleave.
 * With Redis on, one node of the cluster runs it per interval ({@link SingletonJob}).
 */
public final class RetentionVerticle extends VerticleBase {
  public static final String ORDER_LOG = "order_log";
  public static final String OUTBOX = "outbox";
  public static final String IDEMPOTENCY_KEYS = "idempotency_keys";
  public static final String BULK_JOBS = "bulk_jobs";
  public static final String RECONCILIATION_RUNS = "reconciliation_runs";
  public static final String JOB = "retention";
  private static final Logger log = LoggerFactory.getLogger(RetentionVerticle.class);

  private final AppConfig config;
  private final PgConnectOptions connectOptions;
  private final NodeStats stats;
  private final RedisHealth redisHealth;
  private MaintenanceStore store;
  private SingletonJob periodic;
  private long timer = -1;
  private boolean stopped;
  /** The last event id this node's delivered events' pass looked at: its next look starts after it. */
  private long deliveredEventsLookedUpTo;

  /** {@code redisHealth} is null when Redis is off: then every node runs retention. */
  public RetentionVerticle(AppConfig config, PgConnectOptions connectOptions, NodeStats stats, RedisHealth redisHealth) {
    this.config = config;
    this.connectOptions = connectOptions;
    this.stats = stats;
    this.redisHealth = redisHealth;
  }

  @Override
  public Future<?> start() {
    store = MaintenanceStore.shared(vertx, connectOptions, config.database().background());
    for (String table : new String[] {ORDER_LOG, OUTBOX, IDEMPOTENCY_KEYS, BULK_JOBS, RECONCILIATION_RUNS}) {
      stats.retentionDeleted(table, 0);
    }
    long intervalMillis = config.retention().intervalSeconds() * 1000L;
    periodic = SingletonJob.create(vertx, JOB, intervalMillis, config.node().id(), redisHealth, stats.registry());
    timer = vertx.setPeriodic(intervalMillis, id -> runOnce());
    return Future.succeededFuture();
  }

  @Override
  public Future<?> stop() {
    stopped = true;
    vertx.cancelTimer(timer);
    return periodic == null ? Future.succeededFuture() : periodic.close();
  }

  /** A run still going when the next is due makes that one skip. */
  private void runOnce() {
    AppConfig.Retention retention = config.retention();
    periodic.runUnlessRunning(() -> purge(ORDER_LOG, retention.orderLogHours(), full(store::deleteOldOrderLog))
            .compose(none -> purge(OUTBOX, retention.publishedOutboxHours(), this::deleteDeliveredEvents))
            .compose(none -> purge(OUTBOX, retention.eventsMaxDays(), full(this::deleteExpiredEvents)))
            .compose(none -> purge(IDEMPOTENCY_KEYS, retention.idempotencyKeyHours(),
                full(store::deleteOldIdempotencyKeys)))
            .compose(none -> purge(BULK_JOBS, retention.jobsDays(), full(store::deleteOldBulkJobs)))
            .compose(none -> purge(RECONCILIATION_RUNS, retention.jobsDays(),
                full(store::deleteOldReconciliationRuns))));
  }

  /** How many rows one batch deleted, and whether another batch may find more. */
  private record Batch(int deleted, boolean more) {}

  /** A delete that takes the oldest rows first: more may follow while it took a whole batch. */
  private static BiFunction<Integer, Integer, Future<Batch>> full(
      BiFunction<Integer, Integer, Future<Integer>> delete) {
    return (age, batchSize) -> delete.apply(age, batchSize).map(deleted -> new Batch(deleted, deleted >= batchSize));
  }

  /** One look at the events after those this node looked at before ({@link MaintenanceStore#deleteDeliveredEvents}). */
  private Future<Batch> deleteDeliveredEvents(int hours, int batchSize) {
    return store.deleteDeliveredEvents(hours, batchSize, config.kafka().enabled(), deliveredEventsLookedUpTo)
        .map(pass -> {
          deliveredEventsLookedUpTo = pass.lookedUpTo();
          return new Batch(pass.deleted(), pass.more());
        });
  }

  /** One batch of events past the maximum age; those some sink did not have are counted and logged. */
  private Future<Integer> deleteExpiredEvents(int days, int batchSize) {
    return store.deleteExpiredEvents(days, batchSize, config.kafka().enabled()).map(expired -> {
      if (expired.undelivered() > 0) {
        stats.eventsDroppedUndelivered(expired.undelivered());
        log.warn("retention dropped {} events older than {} days that some sink (Kafka or a webhook) did not have",
            expired.undelivered(), days);
      }
      return expired.deleted();
    });
  }

  /** Deletes batch after batch from one table; a failure is logged and left to the next run. */
  private Future<Void> purge(String table, int age, BiFunction<Integer, Integer, Future<Batch>> deleteBatch) {
    return batches(table, age, deleteBatch, 0)
        .onSuccess(deleted -> {
          if (deleted > 0) {
            log.info("retention deleted {} {} rows past their window of {}", deleted, table, age);
          }
        })
        .recover(failure -> {
          log.warn("retention of {} failed, the next run tries again: {}", table, failure.toString());
          return Future.succeededFuture(0L);
        })
        .mapEmpty();
  }

  private Future<Long> batches(String table, int age, BiFunction<Integer, Integer, Future<Batch>> deleteBatch,
                               long soFar) {
    if (stopped) {
      return Future.succeededFuture(soFar);
    }
    return deleteBatch.apply(age, config.retention().batchSize()).compose(batch -> {
      stats.retentionDeleted(table, batch.deleted());
      // Each batch is its own statement and commit; the event loop is free while it runs.
      return batch.more()
          ? batches(table, age, deleteBatch, soFar + batch.deleted())
          : Future.succeededFuture(soFar + batch.deleted());
    });
  }
}
