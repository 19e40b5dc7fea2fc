package ordertimeout.store;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.junit5.Timeout;
import io.vertx.junit5.VertxExtension;
import io.vertx.junit5.VertxTestContext;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.PreparedQuery;
import io.vertx.sqlclient.Query;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowSet;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Transaction;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A request the pool never answers (vertx-sql-client 5.0.8, decision 0008) fails after the bound, whichever way it
 * asked for a connection; a connection granted after that goes back; the pool's own answers pass as they are. The
 * real pool behind it: {@code PoolWaitTest}.
 */
@ExtendWith(VertxExtension.class)
@Timeout(value = 10, timeUnit = TimeUnit.SECONDS)
class AnsweringPoolTest {
  private static final long BOUND_MILLIS = 200;

  @Test
  void requestsThePoolLeavesUnansweredFailAfterTheBound(Vertx vertx, VertxTestContext test) {
    SilentPool silent = new SilentPool();
    Pool pool = new AnsweringPool(vertx, silent, "silent", BOUND_MILLIS);
    long start = System.nanoTime();
    List<Future<?>> requests = List.of(
        pool.getConnection(),
        pool.withTransaction(conn -> conn.query("SELECT 1").execute()),
        pool.withConnection(conn -> conn.query("SELECT 1").execute()));
    Future.join(requests).onComplete(all -> test.verify(() -> {
      long waitedMillis = (System.nanoTime() - start) / 1_000_000;
      assertThat(waitedMillis).as("waited ms").isBetween(BOUND_MILLIS, 10 * BOUND_MILLIS);
      for (Future<?> request : requests) {
        assertThat(request.cause()).isInstanceOf(TimeoutException.class).hasMessageContaining("silent");
      }
      assertThat(silent.requests).hasSize(requests.size());
      test.completeNow();
    }));
  }

  @Test
  void aConnectionGrantedAfterTheAnswerGoesBack(Vertx vertx, VertxTestContext test) {
    SilentPool late = new SilentPool();
    Pool pool = new AnsweringPool(vertx, late, "late", BOUND_MILLIS);
    AtomicInteger closed = new AtomicInteger();
    pool.getConnection().onComplete(answered -> test.verify(() -> {
      assertThat(answered.cause()).isInstanceOf(TimeoutException.class);
      late.requests.get(0).complete(connection(closed));
      assertThat(closed).as("connections given back").hasValue(1);
      test.completeNow();
    }));
  }

  @Test
  void aConnectionGrantedInTimeIsTheAnswerAndGoesBackAfterItsWork(Vertx vertx, VertxTestContext test) {
    SilentPool granting = new SilentPool();
    Pool pool = new AnsweringPool(vertx, granting, "granting", BOUND_MILLIS);
    AtomicInteger closed = new AtomicInteger();
    Future<RowSet<Row>> work = pool.withConnection(conn -> conn.preparedQuery("SELECT 1").execute());
    granting.requests.get(0).complete(connection(closed));
    work.onComplete(ran -> test.verify(() -> {
      assertThat(ran.succeeded()).as("ran: " + ran.cause()).isTrue();
      assertThat(closed).as("connections given back").hasValue(1);
      test.completeNow();
    }));
  }

  /** The pool's own refusal (its wait ran out, its queue is full) reaches the caller as it is, before the bound. */
  @Test
  void thePoolsOwnFailureIsTheAnswer(Vertx vertx, VertxTestContext test) {
    SilentPool refusing = new SilentPool();
    Pool pool = new AnsweringPool(vertx, refusing, "refusing", BOUND_MILLIS);
    IllegalStateException tooBusy = new IllegalStateException("the pool's own refusal");
    long start = System.nanoTime();
    Future<SqlConnection> request = pool.getConnection();
    refusing.requests.get(0).fail(tooBusy);
    request.onComplete(answered -> test.verify(() -> {
      assertThat(answered.cause()).isSameAs(tooBusy);
      assertThat((System.nanoTime() - start) / 1_000_000).as("ms").isLessThan(BOUND_MILLIS);
      test.completeNow();
    }));
  }

  /**
   * The BEGIN does not wait for its answer: the transaction's first statement is sent while it is on its way, and the
   * COMMIT goes once both are answered. (Vert.x's own withTransaction sends the statements after BEGIN's answer, a round
   * trip later.)
   */
  @Test
  void theFirstStatementGoesOutBeforeTheBeginIsAnswered(Vertx vertx, VertxTestContext test) {
    SilentPool granting = new SilentPool();
    Pool pool = new AnsweringPool(vertx, granting, "pipelining", BOUND_MILLIS);
    List<String> sent = new ArrayList<>();
    Promise<Transaction> beginAnswer = Promise.promise();
    Future<RowSet<Row>> work = pool.withTransaction(conn -> {
      sent.add("statement, BEGIN answered: " + beginAnswer.future().isComplete());
      return conn.preparedQuery("SELECT 1").execute();
    });
    granting.requests.get(0).complete(transactionalConnection(beginAnswer, sent));
    test.verify(() -> assertThat(sent).containsExactly("BEGIN", "statement, BEGIN answered: false"));
    beginAnswer.complete();
    work.onComplete(ran -> test.verify(() -> {
      assertThat(ran.succeeded()).as("ran: " + ran.cause()).isTrue();
      assertThat(sent).containsExactly("BEGIN", "statement, BEGIN answered: false", "COMMIT", "close");
      test.completeNow();
    }));
  }

  /** A pool that answers a request for a connection only when the test completes it. */
  private static final class SilentPool implements Pool {
    final List<Promise<SqlConnection>> requests = new ArrayList<>();

    @Override
    public Future<SqlConnection> getConnection() {
      Promise<SqlConnection> request = Promise.promise();
      requests.add(request);
      return request.future();
    }

    @Override
    public Query<RowSet<Row>> query(String sql) {
      throw new UnsupportedOperationException();
    }

    @Override
    public PreparedQuery<RowSet<Row>> preparedQuery(String sql) {
      throw new UnsupportedOperationException();
    }

    @Override
    public PreparedQuery<RowSet<Row>> preparedQuery(String sql, io.vertx.sqlclient.PrepareOptions options) {
      throw new UnsupportedOperationException();
    }

    @Override
    public int size() {
      return 0;
    }

    @Override
    public Future<Void> close() {
      return Future.succeededFuture();
    }
  }

  /** A connection whose BEGIN the test answers, and which lists what was sent on it. */
  @SuppressWarnings("unchecked")
  private static SqlConnection transactionalConnection(Promise<Transaction> beginAnswer, List<String> sent) {
    PreparedQuery<RowSet<Row>> statement = (PreparedQuery<RowSet<Row>>) Proxy.newProxyInstance(
        AnsweringPoolTest.class.getClassLoader(), new Class<?>[] {PreparedQuery.class},
        (proxy, method, args) -> Future.succeededFuture((RowSet<Row>) null));
    Transaction transaction = (Transaction) Proxy.newProxyInstance(AnsweringPoolTest.class.getClassLoader(),
        new Class<?>[] {Transaction.class}, (proxy, method, args) -> switch (method.getName()) {
          case "commit", "rollback" -> {
            sent.add(method.getName().toUpperCase());
            yield Future.succeededFuture();
          }
          default -> throw new UnsupportedOperationException(method.getName());
        });
    return (SqlConnection) Proxy.newProxyInstance(AnsweringPoolTest.class.getClassLoader(),
        new Class<?>[] {SqlConnection.class}, (proxy, method, args) -> switch (method.getName()) {
          case "begin" -> {
            sent.add("BEGIN");
            yield beginAnswer.future();
          }
          case "transaction" -> transaction;
          case "preparedQuery" -> statement;
          case "close" -> {
            sent.add("close");
            yield Future.succeededFuture();
          }
          default -> throw new UnsupportedOperationException(method.getName());
        });
  }

  /** A connection whose statements all return an empty result and whose close is counted. */
  @SuppressWarnings("unchecked")
  private static SqlConnection connection(AtomicInteger closed) {
    PreparedQuery<RowSet<Row>> statement = (PreparedQuery<RowSet<Row>>) Proxy.newProxyInstance(
        AnsweringPoolTest.class.getClassLoader(), new Class<?>[] {PreparedQuery.class},
        (proxy, method, args) -> Future.succeededFuture((RowSet<Row>) null));
    return (SqlConnection) Proxy.newProxyInstance(AnsweringPoolTest.class.getClassLoader(),
        new Class<?>[] {SqlConnection.class}, (proxy, method, args) -> switch (method.getName()) {
          case "close" -> {
            closed.incrementAndGet();
            yield Future.succeededFuture();
          }
          case "preparedQuery" -> statement;
          default -> throw new UnsupportedOperationException(method.getName());
        });
  }
}
