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
 * {@code retention.idempotencyKeyHours}.
 * Each delete takes at most {@code retention.batchSize} rows in a transaction of its own, and the next
 * batch follows only while the last one was full, so no lock is held for long and closes interleave.
 * With Redis on, one node of the cluster runs it per interval ({@link SingletonJob}).
 */
public final class RetentionVerticle extends VerticleBase {
  public static final String ORDER_LOG = "order_log";
  public static final String OUTBOX = "outbox";
  public static final String IDEMPOTENCY_KEYS = "idempotency_keys";
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
    for (String table : new String[] {ORDER_LOG, OUTBOX, IDEMPOTENCY_KEYS}) {
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
    periodic.runUnlessRunning(() -> purge(ORDER_LOG, retention.orderLogHours(), store::deleteOldOrderLog)
            .compose(none -> purge(OUTBOX, retention.publishedOutboxHours(),
                (hours, batchSize) -> store.deleteDeliveredEvents(hours, batchSize, config.kafka().enabled())))
            .compose(none -> purge(OUTBOX, retention.eventsMaxDays(), this::deleteExpiredEvents))
            .compose(none -> purge(IDEMPOTENCY_KEYS, retention.idempotencyKeyHours(), store::deleteOldIdempotencyKeys)));
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
  private Future<Void> purge(String table, int hours, BiFunction<Integer, Integer, Future<Integer>> deleteBatch) {
    return batches(table, hours, deleteBatch, 0)
        .onSuccess(deleted -> {
          if (deleted > 0) {
            log.info("retention deleted {} {} rows past their window of {}", deleted, table, hours);
          }
        })
        .recover(failure -> {
          log.warn("retention of {} failed, the next run tries again: {}", table, failure.toString());
          return Future.succeededFuture(0L);
        })
        .mapEmpty();
  }

  private Future<Long> batches(String table, int hours, BiFunction<Integer, Integer, Future<Integer>> deleteBatch, long soFar) {
    int batchSize = config.retention().batchSize();
    if (stopped) {
      return Future.succeededFuture(soFar);
    }
    return deleteBatch.apply(hours, batchSize).compose(deleted -> {
      stats.retentionDeleted(table, deleted);
      // Each batch is its own statement and commit; the event loop is free while it runs.
      return deleted < batchSize
          ? Future.succeededFuture(soFar + deleted)
          : batches(table, hours, deleteBatch, soFar + deleted);
    });
  }
}
