package ordertimeout.store;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.PrepareOptions;
import io.vertx.sqlclient.PreparedQuery;
import io.vertx.sqlclient.Query;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowSet;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Transaction;
import io.vertx.sqlclient.TransactionRollbackException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.TimeoutException;
import java.util.function.Function;

/**
 * A pool whose every request for a connection is answered: with a connection, with the pool's own failure, or, when
 * the pool has said nothing {@code unansweredMillis} after the request (its connection timeout and a margin), with a
 * {@link TimeoutException}. vertx-sql-client 5.0.8 leaves a request unanswered when its wait ends just as the
 * connection being opened for it is ready (decision 0008); without this, a close batch or a group commit waiting on
 * it would hold its place forever. A connection the pool grants after that answer goes straight back.
 * Transactions ({@code withTransaction}) and {@code withConnection} take their connection through
 * {@link #getConnection}. Statements run on the pool ({@link #query}, {@link #preparedQuery}) go to it unchanged:
 * their wait has a timer of its own that always answers.
 */
final class AnsweringPool implements Pool {
  private static final Logger log = LoggerFactory.getLogger(AnsweringPool.class);

  private final Vertx vertx;
  private final Pool pool;
  private final String name;
  private final long unansweredMillis;

  AnsweringPool(Vertx vertx, Pool pool, String name, long unansweredMillis) {
    this.vertx = vertx;
    this.pool = pool;
    this.name = name;
    this.unansweredMillis = unansweredMillis;
  }

  @Override
  public Future<SqlConnection> getConnection() {
    Future<SqlConnection> granted = pool.getConnection();
    Promise<SqlConnection> answer = Promise.promise();
    long timer = vertx.setTimer(unansweredMillis, fired -> {
      if (answer.tryFail(new TimeoutException("pool " + name + " neither granted nor refused a connection within "
          + unansweredMillis + " ms"))) {
        log.warn("pool {} left a request for a connection unanswered for {} ms; it failed it (decision 0008)", name,
            unansweredMillis);
      }
    });
    granted.onComplete(result -> {
      vertx.cancelTimer(timer);
      if (result.failed()) {
        answer.tryFail(result.cause());
      } else if (!answer.tryComplete(result.result())) {
        result.result().close();
      }
    });
    return answer.future();
  }

  /**
   * Like {@link Pool#withTransaction(Function)}, but the BEGIN goes out with the transaction's first statements
   * instead of a round trip before them: the connection runs its commands in the order they were given, so those
   * statements still run inside the transaction. PostgreSQL fails a BEGIN only with its connection (a BEGIN inside a
   * transaction is a warning), and then the statements after it fail with it.
   */
  @Override
  public <T> Future<T> withTransaction(Function<SqlConnection, Future<T>> work) {
    return getConnection().compose(conn -> {
      Future<Transaction> begun = conn.begin();
      Transaction tx = conn.transaction();
      Future<T> done;
      try {
        done = work.apply(conn);
      } catch (RuntimeException thrown) {
        done = Future.failedFuture(thrown);
      }
      Future<T> worked = done;
      return begun.compose(started -> worked)
          .compose(result -> tx.commit().map(result),
              failure -> failure instanceof TransactionRollbackException
                  ? Future.failedFuture(failure)
                  : tx.rollback().transform(rolledBack -> Future.<T>failedFuture(failure)))
          .onComplete(ended -> conn.close());
    });
  }

  @Override
  public Query<RowSet<Row>> query(String sql) {
    return pool.query(sql);
  }

  @Override
  public PreparedQuery<RowSet<Row>> preparedQuery(String sql) {
    return pool.preparedQuery(sql);
  }

  @Override
  public PreparedQuery<RowSet<Row>> preparedQuery(String sql, PrepareOptions options) {
    return pool.preparedQuery(sql, options);
  }

  @Override
  public int size() {
    return pool.size();
  }

  @Override
  public Future<Void> close() {
    return pool.close();
  }
}
