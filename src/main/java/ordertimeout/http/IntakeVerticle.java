package ordertimeout.http;

import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.net.NetClientOptions;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.BodyHandler;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.sqlclient.Pool;
import ordertimeout.config.AppConfig;
import ordertimeout.metrics.NodeStats;
import ordertimeout.order.CreateOutcome;
import ordertimeout.order.CreateRequest;
import ordertimeout.order.LeasedOrderIds;
import ordertimeout.order.PayRequest;
import ordertimeout.order.StateChange;
import ordertimeout.store.CloseFailures;
import ordertimeout.store.EventStore;
import ordertimeout.store.BulkJobStore;
import ordertimeout.store.DeadlineExtension;
import ordertimeout.store.InventoryStore;
import ordertimeout.store.ReconciliationRuns;
import ordertimeout.store.LockedSkus;
import ordertimeout.store.OrderCreates;
import ordertimeout.store.OrderSearch;
import ordertimeout.store.OrderStore;
import ordertimeout.store.Pools;
import ordertimeout.store.StatusCache;
import ordertimeout.timer.OwnedShards;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * The HTTP API: authentication, the contract's checks before each /v1 route (after the key check and the
 * body limit), one failure handler, the order and admin routes, metrics, health and GET /openapi.yaml.
 */
public final class IntakeVerticle extends VerticleBase {
  private final AppConfig config;
  private final PgConnectOptions connectOptions;
  private final NodeStats stats;
  private final LeasedOrderIds orderIds;
  private final OwnedShards owned;
  private final OpsRoutes opsRoutes;
  private final ContractChecks contract;
  private final HttpConnections connections;
  private final LockedSkus lockedSkus;
  private final StatusCache statusCache;
  private final IntakeGroups groups;

  /** {@code lockedSkus}, {@code statusCache} and {@code groups}: the node's, shared by its intake instances. */
  public IntakeVerticle(AppConfig config, PgConnectOptions connectOptions, NodeStats stats, OwnedShards owned,
                        LeasedOrderIds orderIds, OpsRoutes opsRoutes, ContractChecks contract, HttpConnections connections,
                        LockedSkus lockedSkus, StatusCache statusCache, IntakeGroups groups) {
    this.groups = groups;
    this.lockedSkus = lockedSkus;
    this.statusCache = statusCache;
    this.config = config;
    this.connectOptions = connectOptions;
    this.stats = stats;
    this.orderIds = orderIds;
    this.owned = owned;
    this.opsRoutes = opsRoutes;
    this.contract = contract;
    this.connections = connections;
  }

  /**
   * An intake connection silent this long is closed: its statements end within the pool's statement timeout, so
   * one still waiting then talks to a database the network lost, and would hold its connection until TCP gives up.
   * An idle pooled connection is closed too, and opened again when needed.
   */
  private static NetClientOptions silentConnectionsClosed(int silenceMillis) {
    return new NetClientOptions().setReadIdleTimeout(silenceMillis).setIdleTimeoutUnit(TimeUnit.MILLISECONDS);
  }

  @Override
  public Future<?> start() {
    Pool pool = Pools.shared(vertx, Pools.INTAKE, connectOptions, config.database().poolSize(), config.http().instances(),
        config.database().intake(), config.intake().requestDeadlineMillis(), silentConnectionsClosed(
        Math.max(config.intake().answerWithinMillis(), config.database().intake().statementTimeoutMillis() + 1000)));
    OrderStore store = new OrderStore(pool, config.orders().reopenOnLatePayment(),
        Duration.ofMillis(config.database().intake().lockTimeoutMillis()), statusCache);
    AppConfig.Intake intake = config.intake();
    GroupCommit<CreateRequest, CreateOutcome> creates = groups.creates(() -> nodeCreateGroups(pool));
    GroupCommit<PayRequest, StateChange> pays = groups.pays(() -> new GroupCommit<>(vertx, intake.groupMaxSize(), intake.groupsInFlight(),
        intake.maxQueued(), stats.groupTimers("pay"), store::pay));
    Auth auth = new Auth(config.apiKeys());
    AnswerDeadline answers = new AnswerDeadline(config.intake().answerWithinMillis(), stats);
    HttpConnections.Guard guard = connections.guard(vertx, answers);
    Router router = Router.router(vertx);
    router.route().handler(guard::handle);
    router.route().handler(this::closeAfterAnswerWhileDraining);
    router.route().handler(new AccessLog(IntakeVerticle::clientOf)::handle);
    router.route().handler(RequestTargets::refuseMalformed);
    opsRoutes.mount(vertx, router);
    router.get("/openapi.yaml").handler(contract.document()::serve);
    router.post("/v1/orders").handler(this::timeCreate);
    router.route("/v1/*").handler(auth::authenticate);
    router.route("/v1/admin/*").handler(auth::requireAdmin);
    router.post("/v1/orders").handler(this::refuseWhileDraining);
    router.route("/v1/*").handler(BodyHandler.create(false).setBodyLimit(config.http().maxBodyBytes()));
    new OrderRoutes(vertx, config, store, creates, pays, this::newOrderId, stats).mount(router, contract);
    new AdminRoutes(new InventoryStore(pool), new CloseFailures(pool), store, new ReconciliationRuns(pool), stats, owned)
        .mount(router, contract);
    new DashboardRoutes(store).mount(router, contract);
    new EventRoutes(vertx, EventStore.on(pool), stats).mount(router, contract);
    new SearchRoutes(new OrderSearch(pool)).mount(router, contract);
    DeadlineExtension bulkExtension = DeadlineExtension.moveCloseAtWithin(config.orders().maxTimeoutSeconds());
    new BulkJobRoutes(new BulkJobStore(pool, bulkExtension, statusCache)).mount(router, contract);
    router.route().failureHandler(ctx -> Problems.handle(ctx, stats));
    router.errorHandler(404, ctx -> Problems.send(ctx, 404, "not_found", "no such resource"));
    router.errorHandler(405, ctx -> Problems.send(ctx, 405, "method_not_allowed", "this resource does not take that method"));
    // HTTP/1.1 only: the JDK's HttpClient, which by default asks for an upgrade to HTTP/2 over cleartext (h2c),
    // now and then waited for good or misread the frames when the upgraded connection carried large answers
    // (HttpProtocolTest). Without h2c the server ignores the Upgrade header and such clients stay on HTTP/1.1.
    HttpServer server = vertx.createHttpServer(new HttpServerOptions().setCompressionSupported(true).setHttp2ClearTextEnabled(false)
        .setIdleTimeout(config.http().idleTimeoutSeconds()).setIdleTimeoutUnit(TimeUnit.SECONDS));
    return server.connectionHandler(guard::opened).invalidRequestHandler(InvalidRequests::answer)
        .requestHandler(router)
        .listen(config.http().port(), config.http().host())
        .onSuccess(connections::serving);
  }

  /**
   * From SIGTERM on, each answer says {@code Connection: close} and its connection closes once it is written (a
   * request already read behind it is answered first), so that keep-alive clients and load balancers open their
   * next connection, to another node while this one is not ready.
   */
  private void closeAfterAnswerWhileDraining(RoutingContext ctx) {
    Draining draining = opsRoutes.draining();
    if (draining.isOn()) {
      ctx.response().putHeader(HttpHeaders.CONNECTION, HttpHeaders.CLOSE);
      ctx.request().connection().shutdown(draining.connectionsClosedWithinMillis(), TimeUnit.MILLISECONDS);
    }
    ctx.next();
  }

  /** A new order's id, of a shard this node owns when it can (decision 0034). */
  private long newOrderId() {
    return orderIds.nextOnShards(owned::owns, config.database().shards());
  }

  /** The node's group commit of creates: made once, by the first instance that asks for it. */
  private GroupCommit<CreateRequest, CreateOutcome> nodeCreateGroups(Pool pool) {
    int shards = config.database().shards();
    OrderCreates orderCreates = new OrderCreates(pool, Duration.ofMillis(config.database().intake().lockTimeoutMillis()), lockedSkus,
        order -> order.withId(newOrderId(), shards));
    AppConfig.Intake intake = config.intake();
    return new GroupCommit<>(vertx, intake.groupMaxSize(), intake.groupsInFlight(), intake.maxQueued(),
        stats.groupTimers("create"),
        requests -> orderCreates.create(requests, config.orders().maxUnpaidPerUser(), config.clients()));
  }

  private static String clientOf(RoutingContext ctx) {
    AppConfig.ApiKey caller = Auth.caller(ctx);
    return caller == null ? null : caller.client();
  }

  /** Every create's latency by its answer's status, refusals included. */
  private void timeCreate(RoutingContext ctx) {
    long started = System.nanoTime();
    ctx.addEndHandler(done -> stats.createAnswered(ctx.response().getStatusCode(), System.nanoTime() - started));
    ctx.next();
  }

  /** From SIGTERM on, new orders go to another node: 503 {@code draining}, nothing stored. */
  private void refuseWhileDraining(RoutingContext ctx) {
    if (opsRoutes.draining().isOn()) {
      ctx.response().putHeader("Retry-After", "1");
      Problems.send(ctx, 503, "draining", "this node is shutting down and takes no new orders; retry, another node (or this one restarted) will");
    } else {
      ctx.next();
    }
  }
}
