package ordertimeout.support;

import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Query;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowSet;
import io.vertx.sqlclient.SqlClient;
import io.vertx.sqlclient.SqlConnection;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.StreamSupport;

/**
 * A pool that records the statements sent through {@code query(sql)}, on it and on the connections it lends, as each is
 * executed: with whether some session held ACCESS EXCLUSIVE on {@code orders} or {@code order_items} at that moment
 * (pg_locks, read on a connection of the test's own), and, for a SELECT sent on a lent connection under that lock, its
 * plan (EXPLAIN on the same connection just before it, as nothing else could plan on the locked tables).
 */
public final class StatementsUnderLock implements AutoCloseable {
  /** One statement as sent; {@code plan} is null unless it is a SELECT sent on a connection under the lock. */
  public record Sent(String sql, boolean underLock, String plan) {}

  private static final String LOCK_HELD = """
      SELECT count(*) FROM pg_locks WHERE locktype = 'relation' AND granted AND mode = 'AccessExclusiveLock'
        AND relation IN ('orders'::regclass, 'order_items'::regclass)""";

  private final Connection watcher;
  private final List<Sent> sent = Collections.synchronizedList(new ArrayList<>());

  public StatementsUnderLock() throws SQLException {
    watcher = TestDatabase.jdbc();
  }

  /** {@code pool} as the code under test sees it, every statement recorded. */
  public Pool wrap(Pool pool) {
    return proxy(Pool.class, pool, (proxy, method, args) -> switch (method.getName()) {
      case "withTransaction", "withConnection" -> InvocationHandler.invokeDefault(proxy, method, args);
      case "getConnection" -> ((Future<SqlConnection>) call(pool, method, args)).map(this::watched);
      case "query" -> watched(pool, (String) args[0], false);
      default -> call(pool, method, args);
    });
  }

  public List<Sent> sent() {
    synchronized (sent) {
      return List.copyOf(sent);
    }
  }

  @Override
  public void close() throws SQLException {
    watcher.close();
  }

  private SqlConnection watched(SqlConnection connection) {
    return proxy(SqlConnection.class, connection, (proxy, method, args) -> method.getName().equals("query")
        ? watched(connection, (String) args[0], true) : call(connection, method, args));
  }

  private Query<RowSet<Row>> watched(SqlClient client, String sql, boolean explainable) {
    Query<RowSet<Row>> query = client.query(sql);
    return proxy(Query.class, query, (proxy, method, args) -> {
      if (!method.getName().equals("execute") || method.getParameterCount() != 0) {
        return call(query, method, args);
      }
      boolean locked = Sql.count(watcher, LOCK_HELD) > 0;
      Future<String> plan = locked && explainable && sql.stripLeading().startsWith("SELECT")
          ? client.query("EXPLAIN " + sql).execute().map(rows -> StreamSupport.stream(rows.spliterator(), false)
              .map(row -> row.getString(0)).collect(Collectors.joining("\n")))
          : Future.succeededFuture(null);
      return plan.compose(text -> {
        sent.add(new Sent(sql, locked, text));
        return query.execute();
      });
    });
  }

  @SuppressWarnings("unchecked")
  private static <T> T proxy(Class<?> type, Object target, InvocationHandler handler) {
    return (T) Proxy.newProxyInstance(StatementsUnderLock.class.getClassLoader(), new Class<?>[] {type}, handler);
  }

  private static Object call(Object target, Method method, Object[] args) throws Throwable {
    try {
      return method.invoke(target, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }
}
