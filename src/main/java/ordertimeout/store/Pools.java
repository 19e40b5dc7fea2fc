package ordertimeout.store;

import io.vertx.core.Vertx;
import io.vertx.pgclient.PgBuilder;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.PoolOptions;

/** One pool per node, shared by every verticle that asks for it; each caller gets its callbacks on its own context. */
public final class Pools {
  private static final String NAME = "order-timeout";

  private Pools() {}

  public static Pool shared(Vertx vertx, PgConnectOptions connectOptions, int maxSize) {
    return PgBuilder.pool()
        .with(new PoolOptions().setMaxSize(maxSize).setShared(true).setName(NAME))
        .connectingTo(connectOptions)
        .using(vertx)
        .build();
  }
}
