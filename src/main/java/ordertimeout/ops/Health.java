package ordertimeout.ops;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.healthchecks.Status;
import io.vertx.ext.web.healthchecks.HealthCheckHandler;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import ordertimeout.stats.ServiceStats;
import org.flywaydb.core.api.MigrationVersion;

import java.util.concurrent.TimeUnit;

/**
 * The health checks (vertx-health-check): live while the event loop answers; ready only when the
 * database answers, this build's newest migration is recorded as applied, the wheel holds every
 * owned shard, and the node is not draining. 200 when every check is UP, 503 otherwise; the body
 * lists each check with its data.
 */
final class Health {
  private static final long QUERY_TIMEOUT_MILLIS = 2000;
  private static final long CHECK_TIMEOUT_MILLIS = 5000;

  private Health() {}

  static HealthCheckHandler liveness(Vertx vertx) {
    return HealthCheckHandler.create(vertx).register("eventLoop", promise -> promise.complete(Status.OK()));
  }

  static HealthCheckHandler readiness(Vertx vertx, Pool pool, ServiceStats stats, Operations operations) {
    return HealthCheckHandler.create(vertx)
        .register("database", CHECK_TIMEOUT_MILLIS, promise -> complete(promise,
            timed(pool.query(OpsSql.PING).execute()).map(rows -> Status.OK())))
        .register("migrations", CHECK_TIMEOUT_MILLIS, promise -> complete(promise,
            timed(pool.query(OpsSql.APPLIED_MIGRATIONS).execute()).map(rows -> migrations(rows, operations.latestMigration()))))
        .register("wheel", CHECK_TIMEOUT_MILLIS, promise -> promise.complete(stats.isWheelLoaded()
            ? Status.OK(new JsonObject().put("wheel", "LOADED"))
            : Status.KO(new JsonObject().put("wheel", "LOADING"))))
        .register("drain", CHECK_TIMEOUT_MILLIS, promise -> promise.complete(operations.isDraining()
            ? Status.KO(new JsonObject().put("draining", true))
            : Status.OK(new JsonObject().put("draining", false))));
  }

  /** Ready when no migration failed and this build's newest one is applied (a newer schema from a newer build is fine). */
  private static Status migrations(Iterable<Row> rows, MigrationVersion expected) {
    MigrationVersion applied = MigrationVersion.EMPTY;
    boolean failed = false;
    for (Row row : rows) {
      if (!row.getBoolean("success")) {
        failed = true;
      } else {
        MigrationVersion version = MigrationVersion.fromVersion(row.getString("version"));
        if (version.isNewerThan(applied)) {
          applied = version;
        }
      }
    }
    JsonObject data = new JsonObject()
        .put("applied", applied == MigrationVersion.EMPTY ? null : applied.getVersion())
        .put("expected", expected.getVersion())
        .put("failed", failed);
    boolean ready = !failed && applied != MigrationVersion.EMPTY && !expected.isNewerThan(applied);
    return ready ? Status.OK(data) : Status.KO(data);
  }

  private static <T> Future<T> timed(Future<T> query) {
    return query.timeout(QUERY_TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
  }

  /** A database that does not answer is DOWN (503), not a failed procedure (which the handler turns into 500). */
  private static void complete(Promise<Status> promise, Future<Status> status) {
    status.onComplete(done -> promise.complete(done.succeeded()
        ? done.result()
        : Status.KO(new JsonObject().put("error", String.valueOf(done.cause().getMessage())))));
  }
}
