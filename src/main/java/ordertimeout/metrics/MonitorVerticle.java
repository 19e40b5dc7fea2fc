package ordertimeout.metrics;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.pgclient.PgConnectOptions;
import ordertimeout.config.AppConfig;
import ordertimeout.store.OpsStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.function.DoubleSupplier;

/**
 * Periodic readings for operators: the outbox backlog and the age of its oldest unpublished row, the parked
 * orders and the live nodes whose webhooks differ from this one's (read from the database every
 * {@code metrics.outboxRefreshSeconds}), and the alarms (evaluated every {@code alarms.evaluateSeconds}).
 */
public final class MonitorVerticle extends VerticleBase {
  private static final Logger log = LoggerFactory.getLogger(MonitorVerticle.class);

  private final AppConfig config;
  private final PgConnectOptions connectOptions;
  private final MeterRegistry registry;
  private final NodeStats stats;
  private final Alarms alarms;
  private final DoubleSupplier redisUnreachableSeconds;
  private final DoubleSupplier brokerUnreachableSeconds;
  private final String webhooksFingerprint;
  private OpsStore store;
  private volatile double outboxBacklog = Double.NaN;
  private volatile double outboxOldestAgeSeconds = Double.NaN;
  private volatile double parkedOrders = Double.NaN;
  private double nodesWithOtherWebhooks = Double.NaN;
  private boolean reading;
  private long outboxTimer = -1;
  private long alarmTimer = -1;

  /**
   * {@code redisUnreachableSeconds}: how long Redis has been unreachable, NaN with Redis off;
   * {@code brokerUnreachableSeconds}: how long the node has run out of the timer group since its topic check
   * began, NaN with Kafka off.
   */
  public MonitorVerticle(AppConfig config, PgConnectOptions connectOptions, MeterRegistry registry, NodeStats stats,
                         Alarms alarms, DoubleSupplier redisUnreachableSeconds,
                         DoubleSupplier brokerUnreachableSeconds) {
    this.config = config;
    this.connectOptions = connectOptions;
    this.registry = registry;
    this.stats = stats;
    this.alarms = alarms;
    this.redisUnreachableSeconds = redisUnreachableSeconds;
    this.brokerUnreachableSeconds = brokerUnreachableSeconds;
    this.webhooksFingerprint = config.events().webhooksFingerprint();
  }

  @Override
  public Future<?> start() {
    store = OpsStore.shared(vertx, connectOptions, config.health().databaseTimeoutMillis());
    Gauge.builder(Meters.OUTBOX_BACKLOG, this, monitor -> monitor.outboxBacklog)
        .description("Outbox rows not published yet, counted up to " + OpsStore.OUTBOX_BACKLOG_COUNTED_UP_TO
            + " (the relay publishes them to Kafka; with Kafka off nothing does, so this grows to that)")
        .strongReference(true)
        .register(registry);
    Gauge.builder(Meters.OUTBOX_OLDEST_AGE, this, monitor -> monitor.outboxOldestAgeSeconds)
        .description("Age of the oldest unpublished outbox row, 0 when there is none")
        .baseUnit("seconds")
        .strongReference(true)
        .register(registry);
    Gauge.builder(Meters.ORDERS_PARKED, this, monitor -> monitor.parkedOrders)
        .description("Unpaid orders parked after close.parkAfterFailures failed closes, every node's; each waits for "
            + "POST /v1/admin/orders/{id}/retry (NaN until read)")
        .strongReference(true)
        .register(registry);
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
    Future<Void> outbox = store.outboxBacklog()
        .onSuccess(backlog -> {
          outboxBacklog = backlog.rows();
          outboxOldestAgeSeconds = backlog.oldestAgeSeconds();
        })
        .onFailure(failure -> log.warn("could not read the outbox backlog: {}", failure.toString()))
        .mapEmpty();
    Future<Void> parked = store.parkedOrders()
        .onSuccess(count -> parkedOrders = count)
        .onFailure(failure -> log.warn("could not read the parked orders: {}", failure.toString()))
        .mapEmpty();
    Future<Void> webhooks = store.nodesWithOtherWebhooks(webhooksFingerprint)
        .onSuccess(count -> nodesWithOtherWebhooks = count)
        .onFailure(failure -> log.warn("could not read the other nodes' webhooks: {}", failure.toString()))
        .mapEmpty();
    Future.join(outbox, parked, webhooks).onComplete(done -> reading = false);
  }

  private void evaluateAlarms() {
    alarms.evaluate(config.node().wallClock().millis(), new Alarms.Readings(
        stats.recentLatenessP99Millis(), stats.sweepCatches(), stats.closeBatchesGivenUp(), outboxOldestAgeSeconds,
        stats.lastReconciliationSkuDifferences() < 0 ? Double.NaN : stats.lastReconciliationSkuDifferences(),
        stats.eventsDroppedUndelivered(), parkedOrders, nodesWithOtherWebhooks,
        redisUnreachableSeconds.getAsDouble(), brokerUnreachableSeconds.getAsDouble()));
  }
}
