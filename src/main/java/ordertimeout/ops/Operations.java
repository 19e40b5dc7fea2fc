package ordertimeout.ops;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.Vertx;
import io.vertx.ext.web.Router;
import io.vertx.micrometer.PrometheusScrapingHandler;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.sqlclient.Pool;
import ordertimeout.stats.ServiceStats;
import ordertimeout.store.Pools;
import org.flywaydb.core.api.MigrationVersion;

/**
 * What the people who run a node look at, shared by its verticles: its meter registry, whether it
 * is draining, and the endpoints GET /metrics, GET /health/live and GET /health/ready (without an
 * API key: they are for the scraper and the load balancer).
 */
public final class Operations {
  /** Its own small pool, so that gauges and health checks neither wait behind nor slow down the orders. */
  public static final String POOL = "order-timeout-ops";
  private static final int POOL_SIZE = 2;
  public static final String DRAINING = "ordertimeout.draining";

  private final PrometheusMeterRegistry registry;
  private final PgConnectOptions connectOptions;
  private final MigrationVersion latestMigration;
  private volatile boolean draining;

  public Operations(PrometheusMeterRegistry registry, PgConnectOptions connectOptions, MigrationVersion latestMigration) {
    this.registry = registry;
    this.connectOptions = connectOptions;
    this.latestMigration = latestMigration;
    Gauge.builder(DRAINING, this, ops -> ops.draining ? 1 : 0)
        .description("1 from SIGTERM on: the node is not ready and refuses new orders while its close batches finish")
        .strongReference(true)
        .register(registry);
  }

  public PrometheusMeterRegistry registry() {
    return registry;
  }

  public MigrationVersion latestMigration() {
    return latestMigration;
  }

  public boolean isDraining() {
    return draining;
  }

  /** From now on the node is not ready and new orders answer 503 {@code draining}. */
  public void startDraining() {
    draining = true;
  }

  public Pool pool(Vertx vertx) {
    return Pools.shared(vertx, POOL, connectOptions, POOL_SIZE, 1);
  }

  public void mount(Vertx vertx, Router router, ServiceStats stats) {
    router.get("/metrics").handler(PrometheusScrapingHandler.create(registry));
    router.get("/health/live").handler(Health.liveness(vertx));
    router.get("/health/ready").handler(Health.readiness(vertx, pool(vertx), stats, this));
  }
}
