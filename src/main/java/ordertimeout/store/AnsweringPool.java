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
import io.vertx.sqlclient.SqlResult;
import io.vertx.sqlclient.Tuple;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import java.util.stream.Collector;

/**
 * A pool whose every request for a connection is answered: with a connection, with the pool's own failure, or, when
 * the pool has said nothing {@code unansweredMillis} after the request (its connection timeout and a margin), with a
 * {@link TimeoutException}. vertx-sql-client 5.0.8 leaves a request unanswered when its wait ends just as the
 * connection being opened for it is ready (decision 0008); without this, a close batch or a group commit waiting on
 * it would hold its place forever. A connection the pool grants after that answer goes straight back.
 * Statements run on the pool ({@link #query}, {@link #preparedQuery}) take their connection the same way.
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
    if (granted.isComplete()) {
      return granted;
    }
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

  @Override
  public Query<RowSet<Row>> query(String sql) {
    return new OnConnection<>(connection -> connection.query(sql));
  }

  @Override
  public PreparedQuery<RowSet<Row>> preparedQuery(String sql) {
    return new PreparedOnConnection<>(connection -> connection.preparedQuery(sql));
  }

  @Override
  public PreparedQuery<RowSet<Row>> preparedQuery(String sql, PrepareOptions options) {
    return new PreparedOnConnection<>(connection -> connection.preparedQuery(sql, options));
  }

  @Override
  public int size() {
    return pool.size();
  }

  @Override
  public Future<Void> close() {
    return pool.close();
  }

  /** Runs the statement on a connection of its own, given back when the statement ends. */
  private <T, Q> Future<T> onConnection(Function<SqlConnection, Q> statement, Function<Q, Future<T>> execution) {
    return getConnection().compose(connection -> execution.apply(statement.apply(connection))
        .andThen(ended -> connection.close()));
  }

  private final class OnConnection<T> implements Query<T> {
    private final Function<SqlConnection, Query<T>> statement;

    OnConnection(Function<SqlConnection, Query<T>> statement) {
      this.statement = statement;
    }

    @Override
    public Future<T> execute() {
      return onConnection(statement, Query::execute);
    }

    @Override
    public <R> Query<SqlResult<R>> collecting(Collector<Row, ?, R> collector) {
      return new OnConnection<>(connection -> statement.apply(connection).collecting(collector));
    }

    @Override
    public <U> Query<RowSet<U>> mapping(Function<Row, U> mapper) {
      return new OnConnection<>(connection -> statement.apply(connection).mapping(mapper));
    }
  }

  private final class PreparedOnConnection<T> implements PreparedQuery<T> {
    private final Function<SqlConnection, PreparedQuery<T>> statement;

    PreparedOnConnection(Function<SqlConnection, PreparedQuery<T>> statement) {
      this.statement = statement;
    }

    @Override
    public Future<T> execute() {
      return onConnection(statement, Query::execute);
    }

    @Override
    public Future<T> execute(Tuple arguments) {
      return onConnection(statement, query -> query.execute(arguments));
    }

    @Override
    public Future<T> executeBatch(List<Tuple> batch) {
      return onConnection(statement, query -> query.executeBatch(batch));
    }

    @Override
    public <R> PreparedQuery<SqlResult<R>> collecting(Collector<Row, ?, R> collector) {
      return new PreparedOnConnection<>(connection -> statement.apply(connection).collecting(collector));
    }

    @Override
    public <U> PreparedQuery<RowSet<U>> mapping(Function<Row, U> mapper) {
      return new PreparedOnConnection<>(connection -> statement.apply(connection).mapping(mapper));
    }
  }
}
