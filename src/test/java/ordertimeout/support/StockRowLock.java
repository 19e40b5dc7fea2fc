package ordertimeout.support;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One SKU's stock held by a transaction of the test's own ({@link Sql#holdStock}: its inventory row and its stripes of
 * given-back units), as another writer would hold it: a close batch of an order of that SKU waits for it, in flight,
 * until {@link #close()} rolls the test's transaction back. Also finds the database backends of the close (or late
 * payment) transactions waiting for it, so that a test can cut one with {@code pg_terminate_backend}.
 */
public final class StockRowLock implements AutoCloseable {
  /**
   * The backends of stock moves waiting for a lock of held stock: a close's statement (on a stripe of
   * inventory_released), a late payment's LOCK_STOCK_OF_ORDERS (a create's lock says FOR UPDATE alone), or a close
   * batch's call of close_due_orders (V22), whose statement pg_stat_activity does not show. Their lock comes after the
   * first kilobyte of the closes' statements, so it needs the embedded database's whole statement in pg_stat_activity
   * ({@code track_activity_query_size}).
   */
  private static final String WAITING_STOCK_MOVES = """
      SELECT pid FROM pg_stat_activity
      WHERE wait_event_type = 'Lock'
        AND (query LIKE '%FOR UPDATE OF inv%' OR query LIKE '%INSERT INTO inventory_released%'
             OR query LIKE '%close_due_orders(%')
        AND pid <> pg_backend_pid()
      ORDER BY backend_start""";

  /** The backends of creates waiting for held stock: a create group's lock of its SKUs, which says FOR UPDATE alone. */
  private static final String WAITING_CREATES = """
      SELECT pid FROM pg_stat_activity
      WHERE wait_event_type = 'Lock'
        AND query LIKE '%FROM inventory inv WHERE inv.sku = ANY($1) ORDER BY inv.sku FOR UPDATE'
        AND pid <> pg_backend_pid()
      ORDER BY backend_start""";

  private final Connection connection;

  private StockRowLock(Connection connection) {
    this.connection = connection;
  }

  public static StockRowLock hold(String sku) {
    Connection connection = TestDatabase.jdbc();
    try {
      Sql.holdStock(connection, sku);
      return new StockRowLock(connection);
    } catch (SQLException e) {
      try {
        connection.close();
      } catch (SQLException ignored) {
        // the lock was not taken
      }
      throw new IllegalStateException(e);
    }
  }

  /** The backends of stock moves waiting for a row lock now, oldest first. */
  public static List<Long> waitingBackends() {
    return Sql.rows(WAITING_STOCK_MOVES).stream().map(row -> ((Number) row.get("pid")).longValue()).toList();
  }

  /** The backends of creates waiting for a row lock of held stock now, oldest first. */
  public static List<Long> waitingCreates() {
    return Sql.rows(WAITING_CREATES).stream().map(row -> ((Number) row.get("pid")).longValue()).toList();
  }

  /** Waits (up to {@code timeout}) for a backend waiting for the lock that is not among {@code seen}, and returns it. */
  public static long awaitWaitingBackend(Set<Long> seen, Duration timeout) {
    AtomicLong found = new AtomicLong();
    Await.until("a close transaction waiting for the locked stock row (other than " + seen + ")", timeout, () -> {
      for (long pid : waitingBackends()) {
        if (!seen.contains(pid)) {
          found.set(pid);
          return true;
        }
      }
      return false;
    });
    return found.get();
  }

  /** Terminates a backend, as an administrator or a failover would: its client sees the connection closed. */
  public static void terminate(long pid) {
    Sql.execute("SELECT pg_terminate_backend(?::int)", pid);
  }

  /** Rolls the test's transaction back, which releases the lock. */
  @Override
  public void close() {
    try (connection) {
      connection.rollback();
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }
}
