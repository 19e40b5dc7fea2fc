package ordertimeout.support;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** Plain JDBC against the test database (or another one's connection), for setting up and checking what the service did. */
public final class Sql {
  private Sql() {}

  /** A condition on the outbox row named {@code alias}: the Kafka relay has not published it (not positioned yet, or past its mark). */
  public static String unpublished(String alias) {
    return "NOT " + published(alias);
  }

  /** The opposite of {@link #unpublished}. */
  public static String published(String alias) {
    return """
        EXISTS (SELECT 1 FROM outbox_feed f
                WHERE f.event_id = %s.event_id AND f.position <= (SELECT last_position FROM outbox_relayed))"""
        .formatted(alias);
  }

  /** Gives event {@code eventId} the feed position {@code position} and takes it off the queue, as the dispatcher does. */
  public static void position(long eventId, long position) {
    execute("""
        WITH fed AS (
          INSERT INTO outbox_feed (event_id, position, client) SELECT event_id, ?, client FROM outbox WHERE event_id = ?)
        DELETE FROM outbox_pending WHERE event_id = ?""", position, eventId, eventId);
  }

  /**
   * Pending deliveries to {@code sink} of new events of orders {@code fromOrder} to {@code toOrder}, one each, in
   * shard {@code shard}, next tried at {@code nextAttemptAt} (SQL); each positioned at its event id, without a feed
   * row.
   */
  public static void webhookDeliveries(String sink, long fromOrder, long toOrder, int shard, String nextAttemptAt) {
    execute("""
        WITH events AS (
          INSERT INTO outbox (order_id, client, type, payload)
          SELECT n, 'client-a', 'ORDER_CLOSED', jsonb_build_object('orderId', n::text) FROM generate_series(?, ?) AS n
          RETURNING event_id, order_id)
        INSERT INTO webhook_deliveries (event_id, position, order_id, shard, sink, next_attempt_at)
        SELECT event_id, event_id, order_id, ?, ?, %s FROM events""".formatted(nextAttemptAt),
        fromOrder, toOrder, shard, sink);
  }

  /**
   * A connection whose open transaction holds {@code sku}'s stock ({@link #holdStock}); rollback (or close) lets it go.
   */
  public static Connection connectionHoldingStock(String sku) throws SQLException {
    Connection connection = TestDatabase.jdbc();
    holdStock(connection, sku);
    return connection;
  }

  /**
   * Opens a transaction on {@code connection} that holds {@code sku}'s stock as a writer would: its inventory row,
   * which creates lock, and every stripe closes count their given-back units on (inventory_released, migration V24;
   * made first, with no units, where missing). Creates and closes of the SKU wait for it; pays do not (their stripes
   * are another table's).
   */
  public static void holdStock(Connection connection, String sku) throws SQLException {
    connection.setAutoCommit(true);
    rows(connection, """
        INSERT INTO inventory_released (sku, stripe, units) SELECT ?, s, 0 FROM generate_series(0, 15) s
        ON CONFLICT DO NOTHING""", sku);
    connection.setAutoCommit(false);
    rows(connection, "SELECT * FROM inventory WHERE sku = ? FOR UPDATE", sku);
    rows(connection, "SELECT * FROM inventory_released WHERE sku = ? FOR UPDATE", sku);
  }

  public static List<Map<String, Object>> rows(String sql, Object... params) {
    try (Connection connection = TestDatabase.jdbc()) {
      return rows(connection, sql, params);
    } catch (SQLException e) {
      throw new IllegalStateException(sql, e);
    }
  }

  /** The rows of {@code sql} on {@code connection} (an empty list for a statement without a result), each by column label. */
  public static List<Map<String, Object>> rows(Connection connection, String sql, Object... params) {
    try (PreparedStatement statement = connection.prepareStatement(sql)) {
      for (int i = 0; i < params.length; i++) {
        statement.setObject(i + 1, params[i]);
      }
      List<Map<String, Object>> rows = new ArrayList<>();
      if (!statement.execute()) {
        return rows;
      }
      try (ResultSet result = statement.getResultSet()) {
        int columns = result.getMetaData().getColumnCount();
        while (result.next()) {
          Map<String, Object> row = new LinkedHashMap<>();
          for (int c = 1; c <= columns; c++) {
            row.put(result.getMetaData().getColumnLabel(c), result.getObject(c));
          }
          rows.add(row);
        }
      }
      return rows;
    } catch (SQLException e) {
      throw new IllegalStateException(sql, e);
    }
  }

  /** Buffers {@code statement} touches (shared, hit or read), run once in a transaction rolled back. */
  public static long buffersTouched(String statement) {
    try (Connection connection = TestDatabase.jdbc()) {
      connection.setAutoCommit(false);
      String plan = rows(connection, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + statement).get(0)
          .values().iterator().next().toString();
      connection.rollback();
      JsonObject top = new JsonArray(plan).getJsonObject(0).getJsonObject("Plan");
      return top.getLong("Shared Hit Blocks") + top.getLong("Shared Read Blocks");
    } catch (SQLException e) {
      throw new IllegalStateException(statement, e);
    }
  }

  /** A time of order {@code orderId}'s row (the status cache does not see the tests' UPDATEs), to the microsecond. */
  public static Instant instantOfOrder(String column, long orderId) {
    return Instant.parse((String) rows("SELECT to_char(" + column + " AT TIME ZONE 'UTC', "
        + "'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') AS at FROM orders WHERE id = ?", orderId).get(0).get("at"));
  }

  public static long count(String sql, Object... params) {
    return ((Number) rows(sql, params).get(0).values().iterator().next()).longValue();
  }

  public static long count(Connection connection, String sql, Object... params) {
    return ((Number) rows(connection, sql, params).get(0).values().iterator().next()).longValue();
  }

  public static void execute(String sql, Object... params) {
    rows(sql, params);
  }

  /**
   * DDL on a table a running service uses (a trigger on orders). It locks orders and then each of its partitions,
   * which the service's statements lock in another order: waiting, it would stall the service behind it or lose a
   * deadlock. So it waits at most a moment for its locks and is tried again, for up to a minute on a loaded machine.
   * An autovacuum that holds the table is cancelled by a waiter only once the waiter has waited {@code
   * deadlock_timeout} (a second by default): with the waits shorter than that, each try gave up behind it, and a
   * throttled autovacuum of a large table outlasted the minute's tries. So the waits here reach it.
   */
  public static void executeDdl(String sql) {
    long giveUpAt = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    try (Connection connection = TestDatabase.jdbc()) {
      rows(connection, "SET lock_timeout = '300ms'");
      rows(connection, "SET deadlock_timeout = '100ms'");
      while (true) {
        try {
          rows(connection, sql);
          return;
        } catch (IllegalStateException e) {
          boolean lostItsLocks = e.getCause() instanceof SQLException cause
              && ("40P01".equals(cause.getSQLState()) || "55P03".equals(cause.getSQLState()));
          if (!lostItsLocks || System.nanoTime() > giveUpAt) {
            throw e;
          }
          Thread.sleep(50);
        }
      }
    } catch (SQLException e) {
      throw new IllegalStateException(sql, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(sql, e);
    }
  }
}
