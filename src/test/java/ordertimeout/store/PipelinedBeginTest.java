package ordertimeout.store;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.junit5.Timeout;
import io.vertx.junit5.VertxExtension;
import io.vertx.junit5.VertxTestContext;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowSet;
import io.vertx.sqlclient.TransactionRollbackException;
import ordertimeout.config.AppConfig;
import ordertimeout.support.TestDatabase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A transaction of a pool built by {@link Pools} sends its BEGIN together with its first statements
 * ({@link AnsweringPool#withTransaction}); those statements still run inside it, and a failure still takes them
 * back. That the BEGIN does not wait for its answer is checked against a fake connection in {@code AnsweringPoolTest}.
 */
@ExtendWith(VertxExtension.class)
@Timeout(value = 30, timeUnit = TimeUnit.SECONDS)
class PipelinedBeginTest {
  private Pool pool;

  @BeforeEach
  void pool(Vertx vertx, VertxTestContext test) {
    pool = Pools.shared(vertx, "pipelined-begin-test", TestDatabase.connectOptions(), 2, 1,
        new AppConfig.PoolWaits(1000, 5000, AppConfig.PoolWaits.UNBOUNDED));
    pool.query("CREATE TABLE IF NOT EXISTS pipelined_begin_probe (n int)").execute()
        .compose(created -> pool.query("TRUNCATE pipelined_begin_probe").execute())
        .onComplete(test.succeedingThenComplete());
  }

  @AfterEach
  void close(VertxTestContext test) {
    pool.query("DROP TABLE pipelined_begin_probe").execute()
        .compose(dropped -> pool.close())
        .onComplete(test.succeedingThenComplete());
  }

  /** Without a transaction around them, each statement would get a transaction id of its own. */
  @Test
  void theStatementsSentWithTheBeginRunInOneTransaction(VertxTestContext test) {
    String xactId = "SELECT pg_current_xact_id()::text AS id";
    pool.withTransaction(conn -> {
          Future<RowSet<Row>> first = conn.query(xactId).execute();
          Future<RowSet<Row>> second = conn.query(xactId).execute();
          return Future.all(first, second).map(both -> new String[] {id(first.result()), id(second.result())});
        })
        .onComplete(test.succeeding(ids -> test.verify(() -> {
          assertThat(ids[1]).as("the second statement's transaction").isEqualTo(ids[0]);
          test.completeNow();
        })));
  }

  @Test
  void aFailedStatementTakesBackWhatWasSentWithTheBegin(VertxTestContext test) {
    pool.withTransaction(conn -> {
          conn.query("INSERT INTO pipelined_begin_probe VALUES (1)").execute();
          return conn.query("SELECT 1 / 0").execute();
        })
        .onComplete(test.failing(failure -> probeRows().onComplete(test.succeeding(rows -> test.verify(() -> {
          assertThat(failure).hasMessageContaining("division by zero");
          assertThat(rows).as("rows left by the failed transaction").isZero();
          test.completeNow();
        })))));
  }

  @Test
  void aFailureOfTheWorkItselfRollsBack(VertxTestContext test) {
    IllegalStateException refused = new IllegalStateException("the work's own refusal");
    pool.withTransaction(conn -> conn.query("INSERT INTO pipelined_begin_probe VALUES (1)").execute()
            .compose(inserted -> Future.failedFuture(refused)))
        .onComplete(test.failing(failure -> probeRows().onComplete(test.succeeding(rows -> test.verify(() -> {
          assertThat(failure).isSameAs(refused);
          assertThat(rows).as("rows left by the rolled back transaction").isZero();
          test.completeNow();
        })))));
  }

  /**
   * A statement whose answer the work does not wait for (a create group's plan setting, {@code
   * Sql.PLAN_ONCE_PER_SESSION}) still fails the transaction when it fails: the commit fails and nothing stays.
   */
  @Test
  void aStatementNotWaitedForThatFailsFailsTheCommitAndTakesEverythingBack(VertxTestContext test) {
    pool.withTransaction(conn -> {
          conn.query("INSERT INTO pipelined_begin_probe VALUES (1)").execute();
          conn.query("INSERT INTO pipelined_begin_probe VALUES (1 / 0)").execute();
          return Future.succeededFuture("the work's own answer");
        })
        .onComplete(test.failing(failure -> probeRows().onComplete(test.succeeding(rows -> test.verify(() -> {
          assertThat(failure).as("the commit's failure").isInstanceOf(TransactionRollbackException.class);
          assertThat(rows).as("rows left by the transaction whose last statement failed").isZero();
          test.completeNow();
        })))));
  }

  @Test
  void aTransactionThatWorkedCommits(VertxTestContext test) {
    pool.withTransaction(conn -> conn.query("INSERT INTO pipelined_begin_probe VALUES (1), (2)").execute())
        .compose(committed -> probeRows())
        .onComplete(test.succeeding(rows -> test.verify(() -> {
          assertThat(rows).isEqualTo(2);
          test.completeNow();
        })));
  }

  private Future<Long> probeRows() {
    return pool.query("SELECT count(*) AS n FROM pipelined_begin_probe").execute()
        .map(rows -> rows.iterator().next().getLong("n"));
  }

  private static String id(RowSet<Row> rows) {
    return rows.iterator().next().getString("id");
  }
}
