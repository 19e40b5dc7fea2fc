package ordertimeout.store;

import io.vertx.core.Vertx;
import io.vertx.pgclient.PgBuilder;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.PoolOptions;

/**
 * Named pools shared by the verticles that ask for the same name; each caller gets its callbacks on
 * its own context. Intake and the deadline work (timer, close, sweep) have a pool each, so that
 * requests waiting on locks can never starve the closes.
 */
public final class Pools {
  public static final String INTAKE = "order-timeout-intake";
  public static final String DEADLINES = "order-timeout-deadlines";

  private Pools() {}

  public static Pool shared(Vertx vertx, String name, PgConnectOptions connectOptions, int maxSize, int eventLoops) {
    return PgBuilder.pool()
        .with(new PoolOptions().setMaxSize(maxSize).setShared(true).setName(name).setEventLoopSize(eventLoops))
        .connectingTo(connectOptions)
        .using(vertx)
        .build();
  }
}
