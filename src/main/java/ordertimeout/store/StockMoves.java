package ordertimeout.store;

import io.vertx.core.Future;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Tuple;

/**
 * Moves the stock of orders that were just closed or paid (or paid after their close), inside the caller's transaction: locks the
 * inventory rows in SKU order, sums what the orders hold and updates the rows, in one statement (a paid-after-close
 * order's in two, since it needs every SKU available first).
 */
final class StockMoves {
  private StockMoves() {}

  /** Closed orders: reserved back to available. */
  static Future<Void> release(SqlConnection conn, Long[] orderIds) {
    return move(conn, orderIds, Sql.RELEASE_STOCK_OF_ORDERS);
  }

  /** Paid orders: the reservation becomes a sale. */
  static Future<Void> sell(SqlConnection conn, Long[] orderIds) {
    return move(conn, orderIds, Sql.SELL_STOCK_OF_ORDERS);
  }

  /**
   * A closed order paid after all: its units go from available to sold, when every SKU has them available; false,
   * with nothing changed, when one has not.
   */
  static Future<Boolean> takeSold(SqlConnection conn, Long[] orderIds) {
    return conn.preparedQuery(Sql.LOCK_STOCK_OF_ORDERS).execute(Tuple.of((Object) orderIds)).compose(held -> {
      String[] skus = new String[held.size()];
      Long[] quantities = new Long[held.size()];
      int i = 0;
      for (Row row : held) {
        if (row.getLong("available") < row.getLong("qty")) {
          return Future.succeededFuture(false);
        }
        skus[i] = row.getString("sku");
        quantities[i++] = row.getLong("qty");
      }
      return conn.preparedQuery(Sql.TAKE_SOLD_STOCK).execute(Tuple.tuple().addArrayOfString(skus).addArrayOfLong(quantities))
          .map(true);
    });
  }

  private static Future<Void> move(SqlConnection conn, Long[] orderIds, String statement) {
    return orderIds.length == 0
        ? Future.succeededFuture()
        : conn.preparedQuery(statement).execute(Tuple.of(orderIds)).mapEmpty();
  }
}
