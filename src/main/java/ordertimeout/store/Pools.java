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

  /** How long a transaction or statement waits for a free connection before it fails (the pool's former default). */
  static final long CONNECTION_WAIT_MILLIS = 30_000;

  private Pools() {}

  public static Pool shared(Vertx vertx, String name, PgConnectOptions connectOptions, int maxSize, int eventLoops) {
    Pool pool = PgBuilder.pool()
        .with(new PoolOptions().setMaxSize(maxSize).setShared(true).setName(name).setEventLoopSize(eventLoops)
            .setConnectionTimeout(0)) // BoundedWaitPool bounds the wait instead
        .connectingTo(connectOptions)
        .using(vertx)
        .build();
    return new BoundedWaitPool(vertx, pool, CONNECTION_WAIT_MILLIS);
  }
}
