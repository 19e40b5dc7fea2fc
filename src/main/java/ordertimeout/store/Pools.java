package ordertimeout.store;

import io.vertx.core.Vertx;
import io.vertx.pgclient.PgBuilder;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.PoolOptions;

import java.util.concurrent.TimeUnit;

/**
 * Named pools shared by the verticles that ask for the same name; each caller gets its callbacks on
 * its own context. Intake and the deadline work (timer, close, sweep) have a pool each, so that
 * requests waiting on locks can never starve the closes.
 */
public final class Pools {
  public static final String INTAKE = "order-timeout-intake";
  public static final String DEADLINES = "order-timeout-deadlines";
  /** One connection of its own for the node-id lease, so that its renewal never queues behind busy intake or closes. */
  public static final String NODE_LEASE = "order-timeout-node-lease";

  /**
   * How long a transaction or statement waits for a free connection before it fails. The pool's own connection
   * timeout bounds the wait: since vertx-sql-client 5.0.8 a connection granted just as that timeout fires goes back
   * to the pool (PoolWaitTest).
   */
  static final long CONNECTION_WAIT_MILLIS = 30_000;

  private Pools() {}

  public static Pool shared(Vertx vertx, String name, PgConnectOptions connectOptions, int maxSize, int eventLoops) {
    return PgBuilder.pool()
        .with(new PoolOptions().setMaxSize(maxSize).setShared(true).setName(name).setEventLoopSize(eventLoops)
            .setConnectionTimeout((int) CONNECTION_WAIT_MILLIS).setConnectionTimeoutUnit(TimeUnit.MILLISECONDS))
        .connectingTo(connectOptions)
        .using(vertx)
        .build();
  }
}
