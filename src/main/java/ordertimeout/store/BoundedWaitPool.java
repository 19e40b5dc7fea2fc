package ordertimeout.store;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.internal.ContextInternal;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.PrepareOptions;
import io.vertx.sqlclient.PreparedQuery;
import io.vertx.sqlclient.Query;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowSet;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.SqlResult;
import io.vertx.sqlclient.Tuple;

import java.util.List;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import java.util.stream.Collector;

/**
 * A pool whose {@link #getConnection()} (and so {@code withTransaction} and {@code withConnection}) waits at most
 * {@code waitMillis} for a free connection. It stands in for the pool's own connection timeout, which must be off
 * underneath: in vertx-sql-client 5.0.7, when that timeout fires just as a connection is granted, the grant goes to
 * the request that already failed and the connection never returns to the pool (an IllegalStateException "Promise
 * already completed" is logged; fixed upstream in 5.0.8, while this project takes Vert.x 5.0.7 through its BOM). Here a
 * connection granted after the wait ended is handed straight back: a waiter that gave up stays in the pool's queue
 * until a connection comes free, and returns that one at once. Statements run on the pool itself ({@link #query},
 * {@link #preparedQuery}) take a connection the same way for each execution.
 */
final class BoundedWaitPool implements Pool {
  private final Vertx vertx;
  private final Pool pool;
  private final long waitMillis;

  /** {@code pool} must have no connection timeout of its own. */
  BoundedWaitPool(Vertx vertx, Pool pool, long waitMillis) {
    this.vertx = vertx;
    this.pool = pool;
    this.waitMillis = waitMillis;
  }

  @Override
  public Future<SqlConnection> getConnection() {
    ContextInternal context = (ContextInternal) vertx.getOrCreateContext(); // the caller's, as the pool would use
    Promise<SqlConnection> answer = context.promise();
    long timer = context.setTimer(waitMillis, id -> answer.tryFail(
        new TimeoutException("no database connection became free within " + waitMillis + " ms")));
    pool.getConnection().onComplete(acquired -> {
      vertx.cancelTimer(timer);
      if (acquired.failed()) {
        answer.tryFail(acquired.cause());
      } else if (!answer.tryComplete(acquired.result())) {
        acquired.result().close(); // the wait was over: back to the pool
      }
    });
    return answer.future();
  }

  @Override
  public Query<RowSet<Row>> query(String sql) {
    return new SimpleOnConnection<>(conn -> conn.query(sql));
  }

  @Override
  public PreparedQuery<RowSet<Row>> preparedQuery(String sql) {
    return new PreparedOnConnection<>(conn -> conn.preparedQuery(sql));
  }

  @Override
  public PreparedQuery<RowSet<Row>> preparedQuery(String sql, PrepareOptions options) {
    return new PreparedOnConnection<>(conn -> conn.preparedQuery(sql, options));
  }

  /** A simple query that takes a connection of this pool for each execution. */
  private final class SimpleOnConnection<T> implements Query<T> {
    private final Function<SqlConnection, Query<T>> query;

    SimpleOnConnection(Function<SqlConnection, Query<T>> query) {
      this.query = query;
    }

    @Override
    public Future<T> execute() {
      return withConnection(conn -> query.apply(conn).execute());
    }

    @Override
    public <R> Query<SqlResult<R>> collecting(Collector<Row, ?, R> collector) {
      return new SimpleOnConnection<>(conn -> query.apply(conn).collecting(collector));
    }

    @Override
    public <U> Query<RowSet<U>> mapping(Function<Row, U> mapper) {
      return new SimpleOnConnection<>(conn -> query.apply(conn).mapping(mapper));
    }
  }

  /** A prepared query that takes a connection of this pool for each execution. */
  private final class PreparedOnConnection<T> implements PreparedQuery<T> {
    private final Function<SqlConnection, PreparedQuery<T>> query;

    PreparedOnConnection(Function<SqlConnection, PreparedQuery<T>> query) {
      this.query = query;
    }

    @Override
    public Future<T> execute() {
      return withConnection(conn -> query.apply(conn).execute());
    }

    @Override
    public Future<T> execute(Tuple tuple) {
      return withConnection(conn -> query.apply(conn).execute(tuple));
    }

    @Override
    public Future<T> executeBatch(List<Tuple> batch) {
      return withConnection(conn -> query.apply(conn).executeBatch(batch));
    }

    @Override
    public <R> PreparedQuery<SqlResult<R>> collecting(Collector<Row, ?, R> collector) {
      return new PreparedOnConnection<>(conn -> query.apply(conn).collecting(collector));
    }

    @Override
    public <U> PreparedQuery<RowSet<U>> mapping(Function<Row, U> mapper) {
      return new PreparedOnConnection<>(conn -> query.apply(conn).mapping(mapper));
    }
  }

  @Override
  public Future<Void> close() {
    return pool.close();
  }

  @Override
  public int size() {
    return pool.size();
  }
}
