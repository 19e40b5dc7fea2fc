package ordertimeout.http;

import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.healthchecks.Status;
import io.vertx.ext.web.Route;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.healthchecks.HealthCheckHandler;
import io.vertx.micrometer.PrometheusScrapingHandler;
import io.vertx.pgclient.PgConnectOptions;
import ordertimeout.kafka.BrokerTopics;
import ordertimeout.store.OpsStore.AppliedMigrations;
import ordertimeout.store.OpsStore;
import ordertimeout.timer.OwnedShards;
import org.flywaydb.core.api.MigrationVersion;

import java.util.concurrent.TimeUnit;

/**
 * GET /metrics, GET /health/live and GET /health/ready, without an API key: they are for the scraper
 * and the load balancer (which may check with HEAD: the same status, no body). Live while the event loop
 * answers; ready only when the database answers, this build's newest migration is recorded as applied, the
 * wheel holds every owned shard, and the node is not draining. 200 when every check is UP, 503 otherwise; the
 * body lists each check with its data. A database that does not answer within
 * {@code health.databaseTimeoutMillis} is down.
 *
 * <p>In a cluster the wheel waits for the group's first assignment, except on a node that started without the broker
 * (decision 0051): it takes orders and closes them from its own wheel ({@code OWN_ORDERS_ONLY}). The {@code broker}
 * check says where the topic check and the group stand. It keeps such a node unready until the group first assigns it
 * shards, so that a rollout gated on readiness halts during a broker outage instead of draining the old nodes (whose
 * shards nobody could then take) or spreading a wrong {@code kafka.bootstrapServers}; with
 * {@code kafka.readyWithoutBroker} the node is ready meanwhile. Either way ready once its shards are loaded.
 */
public final class OpsRoutes {

  private final PrometheusMeterRegistry registry;
  private final PgConnectOptions connectOptions;
  private final MigrationVersion latestMigration;
  private final OwnedShards owned;
  private final Draining draining;
  /** Null with Kafka off. */
  private final BrokerTopics topics;
  private final boolean readyWithoutBroker;
  private final int queryTimeoutMillis;

  public OpsRoutes(PrometheusMeterRegistry registry, PgConnectOptions connectOptions, int queryTimeoutMillis,
                   MigrationVersion latestMigration, OwnedShards owned, Draining draining, BrokerTopics topics,
                   boolean readyWithoutBroker) {
    this.queryTimeoutMillis = queryTimeoutMillis;
    this.registry = registry;
    this.connectOptions = connectOptions;
    this.latestMigration = latestMigration;
    this.owned = owned;
    this.draining = draining;
    this.topics = topics;
    this.readyWithoutBroker = readyWithoutBroker;
  }

  Draining draining() {
    return draining;
  }

  void mount(Vertx vertx, Router router) {
    OpsStore store = OpsStore.shared(vertx, connectOptions, queryTimeoutMillis);
    long checkTimeoutMillis = 2L * queryTimeoutMillis; // past the query's own bound, which reports the check's cause
    router.get("/metrics").handler(PrometheusScrapingHandler.create(registry));
    health(router, "/health/live")
        .handler(HealthCheckHandler.create(vertx).register("eventLoop", promise -> promise.complete(Status.OK())));
    HealthCheckHandler ready = HealthCheckHandler.create(vertx)
        .register("database", checkTimeoutMillis, promise -> complete(promise, timed(store.ping()).map(ok -> Status.OK())))
        .register("migrations", checkTimeoutMillis, promise -> complete(promise, timed(store.appliedMigrations()).map(this::migrations)))
        .register("wheel", checkTimeoutMillis, promise -> promise.complete(wheel()))
        .register("drain", checkTimeoutMillis, promise -> promise.complete(draining.isOn()
            ? Status.KO(new JsonObject().put("draining", true))
            : Status.OK(new JsonObject().put("draining", false))));
    if (topics != null) {
      ready.register("broker", checkTimeoutMillis, promise -> promise.complete(broker()));
    }
    health(router, "/health/ready").handler(ready);
  }

  private Status wheel() {
    if (owned.allLoaded()) {
      return Status.OK(new JsonObject().put("wheel", "LOADED"));
    }
    if (topics != null && topics.startedWithoutTheBroker() && !owned.assigned()) {
      return Status.OK(new JsonObject().put("wheel", "OWN_ORDERS_ONLY"));
    }
    return Status.KO(new JsonObject().put("wheel", "LOADING"));
  }

  /** DOWN only on a node that started without the broker and has not joined yet, unless it may be ready so. */
  private Status broker() {
    JsonObject data = new JsonObject()
        .put("broker", topics.state().name())
        .put("group", owned.assigned() ? "JOINED" : "NOT_JOINED");
    if (!topics.ready()) {
      data.put("withoutTheBrokerSeconds", (long) topics.secondsWithoutTheBroker()).put("error", topics.lastFailure());
    }
    boolean waiting = topics.startedWithoutTheBroker() && !owned.assigned() && !readyWithoutBroker;
    return waiting ? Status.KO(data) : Status.OK(data);
  }

  private static Route health(Router router, String path) {
    return router.route(path).method(HttpMethod.GET).method(HttpMethod.HEAD);
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

  private <T> Future<T> timed(Future<T> query) {
    return query.timeout(queryTimeoutMillis, TimeUnit.MILLISECONDS);
  }

  /** A database that does not answer is DOWN (503), not a failed procedure (which the handler turns into 500). */
  private static void complete(Promise<Status> promise, Future<Status> status) {
    status.onComplete(done -> promise.complete(done.succeeded()
        ? done.result()
        : Status.KO(new JsonObject().put("error", String.valueOf(done.cause().getMessage())))));
  }
}
