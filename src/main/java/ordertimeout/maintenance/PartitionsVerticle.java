package ordertimeout.maintenance;

import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.pgclient.PgConnectOptions;
import ordertimeout.clock.WallClock;
import ordertimeout.config.AppConfig;
import ordertimeout.metrics.NodeStats;
import ordertimeout.redis.RedisHealth;
import ordertimeout.store.MaintenanceStore;
import ordertimeout.store.OrderPartitions;
import ordertimeout.store.Pools;
import ordertimeout.store.StatusCache;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps the partitions of orders and order_items (V11): every {@code retention.partitionsIntervalSeconds} it creates
 * the partitions of the next {@code retention.partitionsAhead} days, then takes out each partition whose range ended
 * more than {@code retention.ordersDays} ago and holds no unpaid order ({@link OrderPartitions#dropFinished}). Runs at
 * start too, so a node started after a long stop creates today's partition before it takes orders. With Redis on, one
 * node of the cluster runs it per interval ({@link SingletonJob}); two at once are safe: when both create the same
 * partitions or take out the same old one, the second may fail (it waits past its lock timeout, or finds the
 * partition made or gone meanwhile: IF NOT EXISTS is checked before the lock), its transaction is rolled back and the
 * run logs a WARN; the next run finds nothing left to do.
 */
public final class PartitionsVerticle extends VerticleBase {
  public static final String JOB = "partitions";
  private static final Logger log = LoggerFactory.getLogger(PartitionsVerticle.class);
  private static final long DAY_MILLIS = 86_400_000L;

  private final AppConfig config;
  private final PgConnectOptions connectOptions;
  private final NodeStats stats;
  private final RedisHealth redisHealth;
  private final WallClock clock;
  private final StatusCache statusCache;
  private OrderPartitions partitions;
  private SingletonJob periodic;
  private long timer = -1;

  /**
   * {@code redisHealth} is null when Redis is off: then every node runs the job; {@code statusCache} forgets every order
   * once partitions were taken out.
   */
  public PartitionsVerticle(AppConfig config, PgConnectOptions connectOptions, NodeStats stats, RedisHealth redisHealth,
                            WallClock clock, StatusCache statusCache) {
    this.config = config;
    this.connectOptions = connectOptions;
    this.stats = stats;
    this.redisHealth = redisHealth;
    this.clock = clock;
    this.statusCache = statusCache;
  }

  @Override
  public Future<?> start() {
    AppConfig.Partitions settings = config.retention().partitions();
    partitions = new OrderPartitions(Pools.shared(vertx, MaintenanceStore.POOL, connectOptions, MaintenanceStore.POOL_SIZE, 1,
        config.database().background()), settings.lockTimeoutMillis(), statusCache);
    stats.partitionsDropped(settings.archive(), 0);
    stats.retentionDeleted(OrderPartitions.ORDERS, 0);
    stats.retentionDeleted(OrderPartitions.ITEMS, 0);
    long intervalMillis = settings.intervalSeconds() * 1000L;
    periodic = SingletonJob.create(vertx, JOB, intervalMillis, config.node().id(), redisHealth, stats.registry());
    timer = vertx.setPeriodic(intervalMillis, id -> runOnce());
    // the partitions ahead before the first create (a failure is left to the next run: the migration made some)
    return createAhead().recover(failure -> {
      log.warn("partitions ahead not created at start, the next run tries again: {}", failure.toString());
      return Future.succeededFuture();
    });
  }

  @Override
  public Future<?> stop() {
    vertx.cancelTimer(timer);
    return periodic == null ? Future.succeededFuture() : periodic.close();
  }

  private void runOnce() {
    periodic.runUnlessRunning(this::maintain)
        .onFailure(failure -> log.warn("the partitions job failed, the next run tries again: {}", failure.toString()));
  }

  /** One run: partitions ahead, then the old finished ones out. */
  public Future<OrderPartitions.Result> maintain() {
    AppConfig.Partitions settings = config.retention().partitions();
    long cutoff = clock.millis() - settings.ordersDays() * DAY_MILLIS;
    return createAhead().compose(created -> partitions.dropFinished(cutoff, settings.archive())
        .onSuccess(result -> {
          stats.partitionsDropped(settings.archive(), result.dropped());
          stats.retentionDeleted(OrderPartitions.ORDERS, (int) Math.min(Integer.MAX_VALUE, result.orders()));
          stats.retentionDeleted(OrderPartitions.ITEMS, (int) Math.min(Integer.MAX_VALUE, result.items()));
          for (OrderPartitions.Dropped dropped : result.partitions()) {
            log.info("partitions job {} {} and its items' partition: {} finished orders and {} items, older than {} days",
                settings.archive() ? "moved to " + OrderPartitions.ARCHIVE_SCHEMA : "dropped", dropped.name(), dropped.orders(),
                dropped.items(), settings.ordersDays());
          }
        }));
  }

  private Future<Integer> createAhead() {
    AppConfig.Partitions settings = config.retention().partitions();
    return partitions.createAhead(clock.millis() + settings.aheadDays() * DAY_MILLIS, settings.partitionDays())
        .onSuccess(created -> {
          if (created > 0) {
            log.info("partitions job created {} partitions of orders and order_items ahead", created);
          }
        });
  }
}
