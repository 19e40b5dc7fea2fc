package ordertimeout.http;

import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.healthchecks.Status;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.healthchecks.HealthCheckHandler;
import io.vertx.micrometer.PrometheusScrapingHandler;
import io.vertx.pgclient.PgConnectOptions;
import ordertimeout.store.OpsStore.AppliedMigrations;
import ordertimeout.store.OpsStore;
import ordertimeout.timer.OwnedShards;
import org.flywaydb.core.api.MigrationVersion;

import java.util.concurrent.TimeUnit;

/**
 * GET /metrics, GET /health/live and GET /health/ready, without an API key: they are for the scraper
 * and the load balancer. Live while the event loop answers; ready only when the database answers,
 * this build's newest migration is recorded as applied, the wheel holds every owned shard, and the
 * node is not draining. 200 when every check is UP, 503 otherwise; the body lists each check with its data.
 */
public final class OpsRoutes {
  private static final long QUERY_TIMEOUT_MILLIS = 2000;
  private static final long CHECK_TIMEOUT_MILLIS = 5000;

  private final PrometheusMeterRegistry registry;
  private final PgConnectOptions connectOptions;
  private final MigrationVersion latestMigration;
  private final OwnedShards owned;
  private final Draining draining;

  public OpsRoutes(PrometheusMeterRegistry registry, PgConnectOptions connectOptions, MigrationVersion latestMigration,
                   OwnedShards owned, Draining draining) {
    this.registry = registry;
    this.connectOptions = connectOptions;
    this.latestMigration = latestMigration;
    this.owned = owned;
    this.draining = draining;
  }

  Draining draining() {
    return draining;
  }

  void mount(Vertx vertx, Router router) {
    OpsStore store = OpsStore.shared(vertx, connectOptions);
    router.get("/metrics").handler(PrometheusScrapingHandler.create(registry));
    router.get("/health/live").handler(HealthCheckHandler.create(vertx).register("eventLoop", promise -> promise.complete(Status.OK())));
    router.get("/health/ready").handler(HealthCheckHandler.create(vertx)
        .register("database", CHECK_TIMEOUT_MILLIS, promise -> complete(promise, timed(store.ping()).map(ok -> Status.OK())))
        .register("migrations", CHECK_TIMEOUT_MILLIS, promise -> complete(promise, timed(store.appliedMigrations()).map(this::migrations)))
        .register("wheel", CHECK_TIMEOUT_MILLIS, promise -> promise.complete(owned.allLoaded()
            ? Status.OK(new JsonObject().put("wheel", "LOADED"))
            : Status.KO(new JsonObject().put("wheel", "LOADING"))))
        .register("drain", CHECK_TIMEOUT_MILLIS, promise -> promise.complete(draining.isOn()
            ? Status.KO(new JsonObject().put("draining", true))
            : Status.OK(new JsonObject().put("draining", false)))));
  }

  /** Ready when no migration failed and this build's newest one is applied (a newer schema from a newer build is fine). */
  private Status migrations(AppliedMigrations applied) {
    boolean none = applied.newest() == MigrationVersion.EMPTY;
    JsonObject data = new JsonObject()
        .put("applied", none ? null : applied.newest().getVersion())
        .put("expected", latestMigration.getVersion())
        .put("failed", applied.anyFailed());
    boolean ready = !applied.anyFailed() && !none && !latestMigration.isNewerThan(applied.newest());
    return ready ? Status.OK(data) : Status.KO(data);
  }

  private static <T> Future<T> timed(Future<T> query) {
    return query.timeout(QUERY_TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
  }

  /** A database that does not answer is DOWN (503), not a failed procedure (which the handler turns into 500). */
  private static void complete(Promise<Status> promise, Future<Status> status) {
    status.onComplete(done -> promise.complete(done.succeeded()
        ? done.result()
        : Status.KO(new JsonObject().put("error", String.valueOf(done.cause().getMessage())))));
  }
}
