package ordertimeout.store;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import org.flywaydb.core.api.MigrationVersion;

/**
 * What health checks and gauges read from the database, read-only. A small pool of its own, so that
 * they neither wait behind nor slow down the orders.
 */
public final class OpsStore {
  public static final String POOL = "order-timeout-ops";
  private static final int POOL_SIZE = 2;

  private final Pool pool;

  private OpsStore(Pool pool) {
    this.pool = pool;
  }

  public static OpsStore shared(Vertx vertx, PgConnectOptions connectOptions) {
    return new OpsStore(Pools.shared(vertx, POOL, connectOptions, POOL_SIZE, 1));
  }

  /** The outbox rows no relay has published yet, and the age of the oldest (0 when none). */
  public record OutboxBacklog(long rows, double oldestAgeSeconds) {}

  /** The newest versioned migration Flyway recorded as applied ({@link MigrationVersion#EMPTY} when none), and whether any failed. */
  public record AppliedMigrations(MigrationVersion newest, boolean anyFailed) {}

  public Future<Void> ping() {
    return pool.query(Sql.PING).execute().mapEmpty();
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
