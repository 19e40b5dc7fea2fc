package ordertimeout.support;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.Map;

/**
 * One JDBC connection to the test database, opened once and kept, for the checks that run after every stock write
 * and every test ({@link StockLedger}, {@link Invariants}): {@link Sql} opens a connection per statement, which takes
 * a good part of a second on a loaded machine.
 */
final class KeptConnection {
  private static Connection connection;

  private KeptConnection() {}

  static synchronized List<Map<String, Object>> rows(String sql, Object... params) {
    try {
      if (connection == null || !connection.isValid(5)) {
        connection = TestDatabase.jdbc();
      }
    } catch (SQLException e) {
      throw new IllegalStateException(sql, e);
    }
    return Sql.rows(connection, sql, params);
  }

  static long count(String sql, Object... params) {
    return ((Number) rows(sql, params).get(0).values().iterator().next()).longValue();
  }
}
