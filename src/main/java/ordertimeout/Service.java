package ordertimeout;

import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.DeploymentOptions;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.pgclient.PgConnectOptions;
import ordertimeout.bus.LocalCodec;
import ordertimeout.close.CloseVerticle;
import ordertimeout.cluster.NodeIdLeaseVerticle;
import ordertimeout.cluster.ShardOwnershipVerticle;
import ordertimeout.cluster.TimerFanoutVerticle;
import ordertimeout.config.AppConfig;
import ordertimeout.delivery.EventDispatchVerticle;
import ordertimeout.delivery.OutboxRelayVerticle;
import ordertimeout.delivery.WebhookVerticle;
import ordertimeout.http.ContractChecks;
import ordertimeout.http.Draining;
import ordertimeout.http.HttpConnections;
import ordertimeout.http.IntakeGroups;
import ordertimeout.http.IntakeVerticle;
import ordertimeout.http.OpsRoutes;
import ordertimeout.kafka.BrokerTopics;
import ordertimeout.kafka.TopicCheckVerticle;
import ordertimeout.limit.LimiterVerticle;
import ordertimeout.maintenance.BulkJobVerticle;
import ordertimeout.maintenance.ReconciliationVerticle;
import ordertimeout.maintenance.PartitionsVerticle;
import ordertimeout.maintenance.RetentionVerticle;
import ordertimeout.metrics.Alarms;
import ordertimeout.metrics.MonitorVerticle;
import ordertimeout.metrics.NodeStats;
import ordertimeout.metrics.Telemetry;
import ordertimeout.order.LeasedOrderIds;
import ordertimeout.redis.RedisHealth;
import ordertimeout.store.LockedSkus;
import ordertimeout.store.Migrations;
import ordertimeout.store.OpsStore;
import ordertimeout.store.Pools;
import ordertimeout.store.StatusCache;
import ordertimeout.sweep.SweepVerticle;
import ordertimeout.timer.OwnedShards;
import ordertimeout.timer.TimerVerticle;
import org.flywaydb.core.api.MigrationVersion;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

/** One node of the service on a Vert.x instance: deploys the verticles in dependency order and drains them on shutdown. */
public final class Service {
  private static final Logger log = LoggerFactory.getLogger(Service.class);

  private final Vertx vertx;
  private final AppConfig config;
  private final NodeStats stats;
  private final PrometheusMeterRegistry registry;
  private final Draining draining;
  private final OpsRoutes opsRoutes;
  private final HttpConnections connections;
  private final Alarms alarms;
  private final CloseVerticle close;
  /** Off in a cluster: other nodes' writes would not reach it. */
  private final StatusCache statusCache;
  private final OwnedShards owned;
  private String ownershipDeployment;
  /** Null when Redis is off. */
  private final RedisHealth redisHealth;
  /** Null when Kafka is off. */
  private final BrokerTopics brokerTopics;
  private String timerDeployment;
  private String sweepDeployment;
  /** Every session of this node, in every pool, carries this name (PostgreSQL's application_name). */
  private final String sessionName;
  private final PgConnectOptions database;

  private Service(Vertx vertx, AppConfig config, PgConnectOptions database, PrometheusMeterRegistry registry,
                  MigrationVersion latestMigration, String sessionName) {
    this.vertx = vertx;
    this.config = config;
    this.sessionName = sessionName;
    this.database = database;
    this.stats = new NodeStats(registry, config.database().shards(), Duration.ofSeconds(config.metrics().windowSeconds()));
    this.registry = registry;
    this.draining = new Draining(registry);
    this.alarms = new Alarms(config.alarms(), Duration.ofSeconds(config.metrics().windowSeconds()), registry);
    this.statusCache = (config.kafka().enabled() ? StatusCache.OFF
        : StatusCache.whileAlone(config.intake().statusCacheEntries())).bindTo(registry);
    this.close = new CloseVerticle(config, database, stats, statusCache);
    int shards = config.database().shards();
    this.owned = (config.kafka().enabled() ? OwnedShards.none(shards) : OwnedShards.all(shards)).bindTo(registry);
    this.brokerTopics = config.kafka().enabled() ? new BrokerTopics(owned::assigned) : null;
    this.opsRoutes = new OpsRoutes(registry, database, config.health().databaseTimeoutMillis(), latestMigration, owned,
        draining, brokerTopics, config.kafka().readyWithoutBroker());
    this.connections = new HttpConnections(config.http(), registry);
    this.redisHealth = config.redis().enabled() ? new RedisHealth(registry, config.redis()) : null;
  }

  /**
   * The options of a node's Vert.x instance: Netty's native epoll transport where it runs (Linux on x86-64, the
   * dependency's platform), Java NIO elsewhere. Epoll took 7-12% less of the service's CPU in the steady state
   * (decision 0028); benchmarks build their node's instance from these too, so that they measure what runs.
   */
  public static VertxOptions vertxOptions() {
    return new VertxOptions().setPreferNativeTransport(true);
  }

  /**
   * Starts a node on a Vert.x instance of its own, built from {@link #vertxOptions()}, that reports its worker and
   * SQL pools, HTTP server, event bus and JVM to the node's registry (served at GET /metrics); {@link #stop()}
   * closes it.
   */
  public static Future<Service> start(AppConfig config, PgConnectOptions database) {
    PrometheusMeterRegistry registry = Telemetry.newRegistry();
    Vertx vertx = Telemetry.meteredVertx(vertxOptions(), registry);
    return start(vertx, registry, config, database).onFailure(failure -> vertx.close());
  }

  /**
   * Starts a node on the caller's Vert.x instance: GET /metrics serves the service's own meters, and
   * Vert.x's too only if that instance was built to report to the same registry (see {@link Telemetry}).
   */
  public static Future<Service> start(Vertx vertx, AppConfig config, PgConnectOptions database) {
    return start(vertx, Telemetry.newRegistry(), config, database);
  }

  private static Future<Service> start(Vertx vertx, PrometheusMeterRegistry registry, AppConfig config, PgConnectOptions database) {
    LocalCodec.registerAll(vertx);
    LeasedOrderIds orderIds = new LeasedOrderIds(config.node().id(), config.node().wallClock());
    Future<ContractChecks> contract = ContractChecks.load(vertx, config);
    String sessionName =
        Pools.SESSION_NAME_PREFIX + config.node().id() + " " + UUID.randomUUID().toString().substring(0, 8);
    PgConnectOptions sessions = Pools.sessionsOf(database, config.database(), sessionName);
    return vertx.executeBlocking(Migrations::latestOnClassPath)
        .map(latest -> new Service(vertx, config, sessions, registry, latest, sessionName))
        .compose(service -> service.deploy(sessions, orderIds, contract));
  }

  /**
   * The lease on the node id first (a node whose id another running node holds starts nothing); in a cluster the topic
   * check next (a broker with wrong topics stops the start; one that does not answer does not, decision 0051: the check
   * is tried again in the background); then limiter and close, so that the timer's first due batch has somewhere to go;
   * on a node alone the timer loads every shard before it finishes starting; in a cluster the timer fan-out and the
   * shard ownership come next (the group then assigns shards, loaded as they come, once the topic check got through);
   * intake last.
   */
  private Future<Service> deploy(PgConnectOptions database, LeasedOrderIds orderIds, Future<ContractChecks> contract) {
    boolean clustered = config.kafka().enabled();
    LockedSkus lockedSkus = new LockedSkus(Duration.ofMillis(config.intake().lockedSkuMillis()));
    IntakeGroups groups = new IntakeGroups();
    return vertx.deployVerticle(new NodeIdLeaseVerticle(config, database, orderIds, statusCache, owned))
        .compose(lease -> {
          if (!clustered) {
            return Future.succeededFuture(lease);
          }
          return vertx.deployVerticle(new TopicCheckVerticle(config, brokerTopics));
        })
        .compose(topics -> vertx.deployVerticle(new LimiterVerticle(config.limits(), config.clients(), redisHealth)))
        .compose(id -> vertx.deployVerticle(close))
        .compose(id -> vertx.deployVerticle(new TimerVerticle(config, database, stats, owned)))
        .compose(id -> {
          timerDeployment = id;
          return clustered ? vertx.deployVerticle(new TimerFanoutVerticle(config, stats, owned))
              .compose(fanout -> vertx.deployVerticle(new ShardOwnershipVerticle(config, owned, stats, orderIds,
                  brokerTopics)))
              .onSuccess(ownership -> ownershipDeployment = ownership)
              .compose(ownership -> vertx.deployVerticle(
                  new OutboxRelayVerticle(config, database, stats, brokerTopics)))
              : Future.succeededFuture(id);
        })
        .compose(id -> vertx.deployVerticle(new SweepVerticle(config, database, owned, stats)))
        .compose(id -> {
          sweepDeployment = id;
          return vertx.deployVerticle(new ReconciliationVerticle(config, database, stats, redisHealth));
        })
        .compose(id -> vertx.deployVerticle(new RetentionVerticle(config, database, stats, redisHealth)))
        .compose(id -> vertx.deployVerticle(new PartitionsVerticle(config, database, stats, redisHealth, config.node().wallClock(), statusCache)))
        .compose(id -> vertx.deployVerticle(new EventDispatchVerticle(config, database, stats)))
        .compose(id -> config.events().webhooks().isEmpty() ? Future.succeededFuture(id)
            : vertx.deployVerticle(new WebhookVerticle(config, database, stats, owned)))
        .compose(id -> vertx.deployVerticle(new MonitorVerticle(config, database, registry, stats, alarms,
            redisHealth == null ? () -> Double.NaN : redisHealth::unreachableSeconds,
            brokerTopics == null ? () -> Double.NaN : brokerTopics::secondsOutOfTheGroup)))
        .compose(id -> vertx.deployVerticle(new BulkJobVerticle(config, database, stats, statusCache)))
        .compose(id -> contract)
        .compose(api -> vertx.deployVerticle(() -> new IntakeVerticle(config, database, stats, owned, orderIds, opsRoutes, api, connections, lockedSkus, statusCache, groups),
            new DeploymentOptions().setInstances(config.http().instances())))
        .map(id -> this);
  }

  public NodeStats stats() {
    return stats;
  }

  public PrometheusMeterRegistry registry() {
    return registry;
  }

  public OwnedShards ownedShards() {
    return owned;
  }

  public Alarms alarms() {
    return alarms;
  }

  /** Null when Kafka is off. */
  public BrokerTopics brokerTopics() {
    return brokerTopics;
  }

  /** Null when Redis is off. */
  public RedisHealth redisHealth() {
    return redisHealth;
  }

  public Vertx vertx() {
    return vertx;
  }

  /**
   * What SIGTERM does: the node stops being ready and answers 503 {@code draining} to new orders, the
   * wheel and the sweep stop handing out due orders, the close batches already handed out finish, then the HTTP
   * servers stop taking connections and the requests in flight are answered ({@link HttpConnections#shutdown}), all
   * within {@code drain.timeoutSeconds}; then Vert.x closes. Reads, pays and cancels are served until the batches
   * are done; every answer during the drain ends its keep-alive connection. When the batches or the requests
   * outlast the timeout, the close verticle stops retrying and the statements this node's sessions still run are
   * cancelled, so that closing the pools (which waits for the statement in flight on each connection) does not wait
   * for a held lock: the drain keeps its bound. A request whose statement was cancelled answers 503; what is left of
   * the batches stays UNPAID in the database and is closed by the next node to load its shard.
   */
  public Future<Void> drain() {
    int timeoutSeconds = config.drain().timeoutSeconds();
    // The cancel's own bound, and a second for the answers of the requests whose statements it cancels.
    Duration answersAfter = Duration.ofMillis(config.health().databaseTimeoutMillis() + 1000L);
    draining.start(Duration.ofSeconds(timeoutSeconds), answersAfter);
    log.info("draining: not ready, refusing new orders, waiting up to {} s for the close batches and the requests in "
        + "flight", timeoutSeconds);
    // Without a context: closing Vert.x stops the event loops that would run the listeners of a future bound to one.
    Promise<Void> drained = Promise.promise();
    undeploy(ownershipDeployment)
        .compose(none -> undeploy(sweepDeployment))
        .compose(none -> undeploy(timerDeployment))
        .compose(none -> closeBatchesFinished(timeoutSeconds))
        .compose(cancelled -> requestsAnswered(timeoutSeconds, cancelled))
        .onComplete(quiet -> stop().onComplete(drained));
    return drained.future();
  }

  /** Waits for the close batches in flight until the drain's deadline; true when it then cancelled the statements. */
  private Future<Boolean> closeBatchesFinished(int timeoutSeconds) {
    return close.drain().timeout(draining.millisLeft(), TimeUnit.MILLISECONDS)
        .map(idle -> {
          log.info("drained: no close batch in flight");
          return false;
        })
        .recover(failure -> {
          log.warn("closing with close batches still in flight after {} s ({}); their orders stay UNPAID and close on "
              + "the next start", timeoutSeconds, failure.toString());
          return cancelStatementsInFlight().map(true);
        });
  }

  /**
   * Shuts the HTTP servers down ({@link HttpConnections#shutdown}): each connection closes once its request is
   * answered. Requests still in flight at the drain's deadline get their statements cancelled (unless the close
   * batches' wait did so already) and {@code health.databaseTimeoutMillis} plus a second to answer 503; then what is
   * still open is closed.
   */
  private Future<Void> requestsAnswered(int timeoutSeconds, boolean cancelled) {
    Future<Void> closed = connections.shutdown(draining.connectionsClosedWithinMillis())
        .onFailure(failure -> log.warn("could not shut the HTTP servers down: {}", failure.toString()));
    if (cancelled) {
      return closed.otherwiseEmpty();
    }
    return closed.timeout(draining.millisLeft(), TimeUnit.MILLISECONDS)
        .onSuccess(none -> log.info("drained: every request in flight answered"))
        .recover(failure -> {
          if (closed.isComplete()) {
            return Future.succeededFuture();
          }
          log.warn("requests still in flight after {} s: cancelling their statements, they answer 503", timeoutSeconds);
          return cancelStatementsInFlight().compose(none -> closed);
        })
        .otherwiseEmpty();
  }

  private Future<Void> cancelStatementsInFlight() {
    int boundMillis = config.health().databaseTimeoutMillis();
    return close.stopRetrying()
        .compose(stopped -> OpsStore.shared(vertx, database, boundMillis).cancelStatementsOf(sessionName))
        .timeout(boundMillis, TimeUnit.MILLISECONDS)
        .onSuccess(cancelled -> log.info("cancelled {} statements in flight", cancelled))
        .onFailure(failure -> log.warn("could not cancel the statements in flight: {}", failure.toString()))
        .<Void>mapEmpty()
        .otherwiseEmpty();
  }

  private Future<Void> undeploy(String deployment) {
    return deployment == null || !vertx.deploymentIDs().contains(deployment) ? Future.succeededFuture() : vertx.undeploy(deployment);
  }

  /** Undeploys every verticle (in-flight transactions finish or roll back) and closes Vert.x. */
  public Future<Void> stop() {
    return vertx.close();
  }
}
