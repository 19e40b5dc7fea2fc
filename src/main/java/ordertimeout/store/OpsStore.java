package ordertimeout.store;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.net.NetClientOptions;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowSet;
import io.vertx.sqlclient.Tuple;
import ordertimeout.config.AppConfig;
import org.flywaydb.core.api.MigrationVersion;

import java.util.concurrent.TimeUnit;

/**
 * What health checks and gauges read from the database, and the drain's cancel of this node's statements. A small
 * pool of its own, so that they neither wait behind nor slow down the orders. Its statements and lock waits end
 * after the readiness bound, and so does a connection that hears nothing back for a few times that bound (a
 * database that went silent), so that readiness comes back by itself on fresh connections.
 */
public final class OpsStore {
  public static final String POOL = "order-timeout-ops";
  /** The backlog gauge counts this many unpublished rows at most: a count is a read of every row it counts. */
  public static final int OUTBOX_BACKLOG_COUNTED_UP_TO = 10_000;
  private static final int POOL_SIZE = 2;
  private static final int MAX_WAITING = 16;
  /** Of the readiness bound: how long a connection may hear nothing, or take to connect, before it is dropped. */
  private static final int SILENCE_FACTOR = 4;

  private final Pool pool;

  private OpsStore(Pool pool) {
    this.pool = pool;
  }

  /** {@code boundMillis}: how long a health check may wait for the database. */
  public static OpsStore shared(Vertx vertx, PgConnectOptions connectOptions, int boundMillis) {
    int silenceMillis = SILENCE_FACTOR * boundMillis;
    NetClientOptions network = new NetClientOptions();
    network.setConnectTimeout(silenceMillis);
    network.setReadIdleTimeout(silenceMillis);
    network.setIdleTimeoutUnit(TimeUnit.MILLISECONDS);
    return new OpsStore(Pools.shared(vertx, POOL, connectOptions, POOL_SIZE, 1,
        new AppConfig.PoolWaits(boundMillis, boundMillis, MAX_WAITING), Pools.CONNECTION_WAIT_MILLIS, network));
  }

  /** The outbox rows no relay has published yet, and the age of the oldest (0 when none). */
  public record OutboxBacklog(long rows, double oldestAgeSeconds) {}

  /** The newest versioned migration Flyway recorded as applied ({@link MigrationVersion#EMPTY} when none), and whether any failed. */
  public record AppliedMigrations(MigrationVersion newest, boolean anyFailed) {}

  /** Parked unpaid orders, every node's (see {@link CloseFailures}). */
  public Future<Long> parkedOrders() {
    return pool.query(Sql.COUNT_PARKED).execute().map(rows -> rows.iterator().next().getLong(0));
  }

  /** Live nodes whose webhooks differ from {@code webhooksFingerprint} (see {@link NodeLeases}). */
  public Future<Long> nodesWithOtherWebhooks(String webhooksFingerprint) {
    return pool.preparedQuery(Sql.COUNT_NODES_WITH_OTHER_WEBHOOKS).execute(Tuple.of(webhooksFingerprint))
        .map(rows -> rows.iterator().next().getLong(0));
  }

  public Future<Void> ping() {
    return pool.query(Sql.PING).execute().mapEmpty();
  }

  /**
   * Cancels the statements running now in the sessions named {@code applicationName} (this node's, see
   * {@link Pools#sessionsOf}); answers how many it asked PostgreSQL to cancel.
   */
  public Future<Integer> cancelStatementsOf(String applicationName) {
    return pool.preparedQuery(Sql.CANCEL_STATEMENTS_OF).execute(Tuple.of(applicationName)).map(RowSet::rowCount);
  }

  public Future<AppliedMigrations> appliedMigrations() {
    return pool.query(Sql.APPLIED_MIGRATIONS).execute().map(rows -> {
      MigrationVersion newest = MigrationVersion.EMPTY;
      boolean failed = false;
      for (Row row : rows) {
        if (!row.getBoolean("success")) {
          failed = true;
        } else {
          MigrationVersion version = MigrationVersion.fromVersion(row.getString("version"));
          if (version.isNewerThan(newest)) {
            newest = version;
          }
        }
      }
      return new AppliedMigrations(newest, failed);
    });
  }

  public Future<OutboxBacklog> outboxBacklog() {
    return pool.query(Sql.OUTBOX_BACKLOG).execute().map(rows -> {
      Row row = rows.iterator().next();
      Number age = row.getNumeric(1);
      return new OutboxBacklog(row.getLong(0), age == null ? 0 : age.doubleValue());
    });
  }
}
