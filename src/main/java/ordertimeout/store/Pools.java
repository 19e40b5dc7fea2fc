package ordertimeout.store;

import io.vertx.core.Vertx;
import io.vertx.core.net.NetClientOptions;
import io.vertx.pgclient.PgBuilder;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.PoolOptions;
import ordertimeout.config.AppConfig;

import java.util.concurrent.TimeUnit;

/**
 * Named pools shared by the verticles that ask for the same name; each caller gets its callbacks on
 * its own context. Intake and the deadline work (timer, close, sweep) have a pool each, so that
 * requests waiting on locks can never starve the closes. Every wait is bounded: a pool's sessions carry
 * its {@code lock_timeout} and {@code statement_timeout}, and its callers queue for a connection up to
 * a bound, for at most {@link #CONNECTION_WAIT_MILLIS} (intake: its requests' deadline).
 */
public final class Pools {
  /** Every node's sessions are named this and then the node's id and instance ({@code application_name}). */
  public static final String SESSION_NAME_PREFIX = "order-timeout node ";

  public static final String INTAKE = "order-timeout-intake";
  public static final String DEADLINES = "order-timeout-deadlines";
  /** One connection of its own for the node-id lease, so that its renewal never queues behind busy intake or closes. */
  public static final String NODE_LEASE = "order-timeout-node-lease";

  /**
   * How long a transaction or statement waits for a free connection before it fails. The pool's own connection
   * timeout bounds the wait: since vertx-sql-client 5.0.8 a connection granted just as that timeout fires goes back
   * to the pool (PoolWaitTest), and a request the pool leaves unanswered fails a margin later (AnsweringPool).
   */
  public static final long CONNECTION_WAIT_MILLIS = 30_000;
  /** How long past its own connection timeout a pool may stay silent before {@link AnsweringPool} answers for it. */
  static final long UNANSWERED_MARGIN_MILLIS = 1000;
  /** PostgreSQL's keepalive probes after the first: this many, this far apart, before it ends the session. */
  private static final int KEEPALIVE_PROBES = 3;
  private static final int KEEPALIVE_PROBE_SECONDS = 10;

  private Pools() {}

  /**
   * What every session of this node carries, whatever its pool: its name in {@code pg_stat_activity}
   * ({@code application_name}, so that the drain can find this node's statements), the end of a transaction left idle
   * (a node paused or stopped while it held row locks gives them back), and PostgreSQL's TCP keepalive, which ends the
   * session of a peer that is gone; the client side turns SO_KEEPALIVE on in {@link #shared}.
   */
  public static PgConnectOptions sessionsOf(PgConnectOptions base, AppConfig.Database config, String applicationName) {
    PgConnectOptions options = new PgConnectOptions(base);
    options.addProperty("application_name", applicationName);
    options.addProperty("idle_in_transaction_session_timeout", Integer.toString(config.idleInTransactionTimeoutMillis()));
    options.addProperty("tcp_keepalives_idle", Integer.toString(config.keepaliveSeconds()));
    options.addProperty("tcp_keepalives_interval", Integer.toString(KEEPALIVE_PROBE_SECONDS));
    options.addProperty("tcp_keepalives_count", Integer.toString(KEEPALIVE_PROBES));
    return options;
  }

  public static Pool shared(Vertx vertx, String name, PgConnectOptions connectOptions, int maxSize, int eventLoops,
                            AppConfig.PoolWaits waits) {
    return shared(vertx, name, connectOptions, maxSize, eventLoops, waits, CONNECTION_WAIT_MILLIS, new NetClientOptions());
  }

  /**
   * {@code connectionWaitMillis}: how long a caller waits for a free connection; {@code network}: the client's socket
   * options, SO_KEEPALIVE turned on. Every request for a connection is answered ({@link AnsweringPool}).
   */
  public static Pool shared(Vertx vertx, String name, PgConnectOptions connectOptions, int maxSize, int eventLoops,
                     AppConfig.PoolWaits waits, long connectionWaitMillis, NetClientOptions network) {
    PgConnectOptions sessions = new PgConnectOptions(connectOptions);
    sessions.addProperty("lock_timeout", Integer.toString(waits.lockTimeoutMillis()));
    sessions.addProperty("statement_timeout", Integer.toString(waits.statementTimeoutMillis()));
    Pool pool = PgBuilder.pool()
        .with(new PoolOptions().setMaxSize(maxSize).setShared(true).setName(name).setEventLoopSize(eventLoops)
            .setMaxWaitQueueSize(waits.maxWaitQueue())
            .setConnectionTimeout((int) connectionWaitMillis).setConnectionTimeoutUnit(TimeUnit.MILLISECONDS))
        .with(network.setTcpKeepAlive(true))
        .connectingTo(sessions)
        .using(vertx)
        .build();
    return new AnsweringPool(vertx, pool, name, connectionWaitMillis + UNANSWERED_MARGIN_MILLIS);
  }
}
