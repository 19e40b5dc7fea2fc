package ordertimeout.http;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.pgclient.PgBuilder;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.PoolOptions;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.pgclient.PgConnection;
import io.vertx.sqlclient.Row;
import ordertimeout.support.Ports;
import ordertimeout.support.Sql;
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

  @Test
  void aConnectionTheServerTerminatedIsDatabaseUnavailable() {
    Vertx vertx = Vertx.vertx();
    try {
      SqlConnection connection = TestService.await(PgConnection.connect(vertx, TestDatabase.connectOptions()));
      Row backend = TestService.await(connection.query("SELECT pg_backend_pid() AS pid").execute()).iterator().next();
      // 57P01, as pg_ctl stop -m fast or -m immediate sends to every backend
      Sql.execute("SELECT pg_terminate_backend(?)", backend.getInteger("pid"));
      Throwable terminated = failureOf(connection.query("SELECT pg_sleep(0.1)").execute());
      Throwable afterwards = failureOf(connection.query("SELECT 1").execute());

      assertThat(Problems.isDatabaseUnavailable(terminated)).as(terminated.toString()).isTrue();
      assertThat(Problems.isDatabaseUnavailable(afterwards)).as(afterwards.toString()).isTrue();
    } finally {
      TestService.await(vertx.close());
    }
  }

  @Test
  void aRefusedConnectIsDatabaseUnavailableButASyntaxErrorIsNot() {
    Vertx vertx = Vertx.vertx();
    try {
      PgConnectOptions nowhere = new PgConnectOptions(TestDatabase.connectOptions()).setHost("127.0.0.1").setPort(Ports.free());
      Throwable refused = failureOf(PgConnection.connect(vertx, nowhere));
      SqlConnection connection = TestService.await(PgConnection.connect(vertx, TestDatabase.connectOptions()));
      Throwable syntax = failureOf(connection.query("SELEKT 1").execute());

      assertThat(Problems.isDatabaseUnavailable(refused)).as(refused.toString()).isTrue();
      assertThat(Problems.isDatabaseUnavailable(syntax)).as(syntax.toString()).isFalse();
    } finally {
      TestService.await(vertx.close());
    }
  }

  private static Throwable failureOf(Future<?> future) {
    Throwable failure = TestService.await(future.<Throwable>transform(done -> Future.succeededFuture(done.cause())));
    assertThat(failure).as("the call failed").isNotNull();
    return failure;
  }
}
