package ordertimeout;

import io.vertx.core.DeploymentOptions;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.pgclient.PgConnectOptions;
import ordertimeout.bus.LocalCodec;
import ordertimeout.close.CloseVerticle;
import ordertimeout.config.AppConfig;
import ordertimeout.intake.IntakeVerticle;
import ordertimeout.limit.LimiterVerticle;
import ordertimeout.order.OrderIds;
import ordertimeout.stats.ServiceStats;
import ordertimeout.sweep.SweepVerticle;
import ordertimeout.timer.TimerVerticle;

/**
 * One node of the service on a Vert.x instance: deploys the verticles in dependency order (limiter
 * and close first, so that the timer's first due batch has somewhere to go; intake last, so that no
 * order is taken before the wheel has reloaded every pending one).
 */
public final class Service {
  private final Vertx vertx;
  private final ServiceStats stats;

  private Service(Vertx vertx, ServiceStats stats) {
    this.vertx = vertx;
    this.stats = stats;
  }

  public static Future<Service> start(Vertx vertx, AppConfig config, PgConnectOptions database) {
    LocalCodec.registerAll(vertx);
    ServiceStats stats = new ServiceStats(config.database().shards());
    OrderIds orderIds = new OrderIds(config.nodeId());
    return vertx.deployVerticle(new LimiterVerticle(config.limits()))
        .compose(id -> vertx.deployVerticle(new CloseVerticle(config, database, stats)))
        .compose(id -> vertx.deployVerticle(new TimerVerticle(config, database, stats)))
        .compose(id -> vertx.deployVerticle(new SweepVerticle(config, database)))
        .compose(id -> vertx.deployVerticle(() -> new IntakeVerticle(config, database, stats, orderIds),
            new DeploymentOptions().setInstances(config.http().instances())))
        .map(id -> new Service(vertx, stats));
  }

  public ServiceStats stats() {
    return stats;
  }

  /** Undeploys every verticle (in-flight transactions finish or roll back) and closes Vert.x. */
  public Future<Void> stop() {
    return vertx.close();
  }
}
