package ordertimeout.ops;

import io.micrometer.core.instrument.Gauge;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import ordertimeout.config.AppConfig;
import ordertimeout.stats.ServiceStats;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Periodic readings for operators: the outbox backlog and the age of its oldest unpublished row
 * (read from the database every {@code metrics.outboxRefreshSeconds}), and the alarms (evaluated
 * every {@code alarms.evaluateSeconds}).
 */
public final class MonitorVerticle extends VerticleBase {
  public static final String OUTBOX_BACKLOG = "ordertimeout.outbox.backlog";
  public static final String OUTBOX_OLDEST_AGE = "ordertimeout.outbox.oldest.age";
  private static final Logger log = LoggerFactory.getLogger(MonitorVerticle.class);

  private final AppConfig config;
  private final Operations operations;
  private final ServiceStats stats;
  private final Alarms alarms;
  private Pool pool;
  private volatile double outboxBacklog = Double.NaN;
  private volatile double outboxOldestAgeSeconds = Double.NaN;
  private boolean reading;
  private long outboxTimer = -1;
  private long alarmTimer = -1;

  public MonitorVerticle(AppConfig config, Operations operations, ServiceStats stats, Alarms alarms) {
    this.config = config;
    this.operations = operations;
    this.stats = stats;
    this.alarms = alarms;
  }

  @Override
  public Future<?> start() {
    pool = operations.pool(vertx);
    Gauge.builder(OUTBOX_BACKLOG, this, monitor -> monitor.outboxBacklog)
        .description("Outbox rows not published yet (no relay publishes yet, so this grows)")
        .strongReference(true)
        .register(operations.registry());
    Gauge.builder(OUTBOX_OLDEST_AGE, this, monitor -> monitor.outboxOldestAgeSeconds)
        .description("Age of the oldest unpublished outbox row, 0 when there is none")
        .baseUnit("seconds")
        .strongReference(true)
        .register(operations.registry());
    outboxTimer = vertx.setPeriodic(1, config.metrics().outboxRefreshSeconds() * 1000L, id -> readOutbox());
    alarmTimer = vertx.setPeriodic(config.alarms().evaluateSeconds() * 1000L, id -> evaluateAlarms());
    return Future.succeededFuture();
  }

  @Override
  public Future<?> stop() {
    vertx.cancelTimer(outboxTimer);
    vertx.cancelTimer(alarmTimer);
    return Future.succeededFuture();
  }

  /** A reading still running when the next is due makes that one skip (a long backlog takes a while to count). */
  private void readOutbox() {
    if (reading) {
      return;
    }
    reading = true;
    pool.query(OpsSql.OUTBOX_BACKLOG).execute()
        .onSuccess(rows -> {
          Row row = rows.iterator().next();
          outboxBacklog = row.getLong(0);
          Number age = row.getNumeric(1);
          outboxOldestAgeSeconds = age == null ? 0 : age.doubleValue();
        })
        .onFailure(failure -> log.warn("could not read the outbox backlog: {}", failure.toString()))
        .onComplete(done -> reading = false);
  }

  private void evaluateAlarms() {
    alarms.evaluate(System.currentTimeMillis(), new Alarms.Readings(
        stats.recentLatenessP99Millis(), stats.sweepCatches(), stats.closeBatchesGivenUp(), outboxOldestAgeSeconds,
        stats.lastReconciliationSkuDifferences() < 0 ? Double.NaN : stats.lastReconciliationSkuDifferences()));
  }
}
