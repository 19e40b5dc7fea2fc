package ordertimeout.support;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
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
      try (PreparedStatement statement = connection.prepareStatement(sql)) {
        for (int i = 0; i < params.length; i++) {
          statement.setObject(i + 1, params[i]);
        }
        List<Map<String, Object>> rows = new ArrayList<>();
        try (ResultSet result = statement.executeQuery()) {
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
      }
    } catch (SQLException e) {
      throw new IllegalStateException(sql, e);
    }
  }

  static long count(String sql, Object... params) {
    return ((Number) rows(sql, params).get(0).values().iterator().next()).longValue();
  }
}
