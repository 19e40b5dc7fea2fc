package ordertimeout.http;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.pgclient.PgBuilder;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.PoolOptions;
import io.vertx.sqlclient.SqlConnection;
import ordertimeout.support.TestDatabase;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.Test;

import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** How the failure handler reads the database's failures: the pool's own, not made-up ones. */
class ProblemsTest {

  @Test
  void aPoolWaitThatRunsOutIsDatabaseUnavailableNotAnInternalError() {
    Vertx vertx = Vertx.vertx();
    try {
      Pool pool = PgBuilder.pool()
          .with(new PoolOptions().setMaxSize(1).setConnectionTimeout(3000).setConnectionTimeoutUnit(TimeUnit.MILLISECONDS))
          .connectingTo(TestDatabase.connectOptions())
          .using(vertx)
          .build();
      SqlConnection held = TestService.await(pool.getConnection());
      Throwable waited = TestService.await(pool.query("SELECT 1").execute().<Throwable>transform(done ->
          Future.succeededFuture(done.cause())));
      held.close();

      assertThat(waited).as("no connection within the pool's wait").isNotNull();
      assertThat(Problems.isDatabaseUnavailable(waited)).as(waited.toString()).isTrue();
      assertThat(Problems.isDatabaseUnavailable(new IllegalStateException("a bug"))).isFalse();
    } finally {
      TestService.await(vertx.close());
    }
  }
}
