package ordertimeout.intake;

import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.BodyHandler;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.sqlclient.Pool;
import ordertimeout.config.AppConfig;
import ordertimeout.order.OrderIds;
import ordertimeout.stats.ServiceStats;
import ordertimeout.store.OrderCreates;
import ordertimeout.store.OrderStore;
import ordertimeout.store.Pools;

/** The HTTP API: authentication, one failure handler, the order and admin routes, health. */
public final class IntakeVerticle extends VerticleBase {
  private final AppConfig config;
  private final PgConnectOptions connectOptions;
  private final ServiceStats stats;
  private final OrderIds orderIds;
  private OrderStore store;

  public IntakeVerticle(AppConfig config, PgConnectOptions connectOptions, ServiceStats stats, OrderIds orderIds) {
    this.config = config;
    this.connectOptions = connectOptions;
    this.stats = stats;
    this.orderIds = orderIds;
  }

  @Override
  public Future<?> start() {
    Pool pool = Pools.shared(vertx, Pools.INTAKE, connectOptions, config.database().poolSize(), config.http().instances());
    store = new OrderStore(pool);
    CreateGroups creates = new CreateGroups(new OrderCreates(pool), config);
    Auth auth = new Auth(config.apiKeys());
    Router router = Router.router(vertx);
    router.get("/health/live").handler(ctx -> OrderRoutes.json(ctx, 200, new JsonObject().put("status", "UP")));
    router.get("/health/ready").handler(this::ready);
    router.route("/v1/*").handler(auth::authenticate);
    router.route("/v1/admin/*").handler(auth::requireAdmin);
    router.route("/v1/*").handler(BodyHandler.create(false).setBodyLimit(config.http().maxBodyBytes()));
    new OrderRoutes(vertx, config, store, creates, orderIds, stats).mount(router);
    new AdminRoutes(store, stats).mount(router);
    router.route().failureHandler(Problems::handle);
    router.errorHandler(404, ctx -> Problems.send(ctx, 404, "not_found", "no such resource"));
    router.errorHandler(405, ctx -> Problems.send(ctx, 405, "method_not_allowed", "this resource does not take that method"));
    HttpServer server = vertx.createHttpServer(new HttpServerOptions().setCompressionSupported(true));
    return server.requestHandler(router).listen(config.http().port(), config.http().host());
  }

  /** Ready when the database answers and the wheel holds every owned shard. */
  private void ready(RoutingContext ctx) {
    store.ping()
        .onSuccess(ok -> {
          boolean loaded = stats.isWheelLoaded();
          OrderRoutes.json(ctx, loaded ? 200 : 503, new JsonObject()
              .put("status", loaded ? "UP" : "DOWN").put("database", "UP").put("wheel", loaded ? "LOADED" : "LOADING"));
        })
        .onFailure(failure -> OrderRoutes.json(ctx, 503, new JsonObject()
            .put("status", "DOWN").put("database", "DOWN").put("wheel", stats.isWheelLoaded() ? "LOADED" : "LOADING")));
  }

}
