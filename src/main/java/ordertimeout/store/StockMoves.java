package ordertimeout.store;

import io.vertx.core.Future;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Tuple;

/**
 * Moves the stock of a closed order paid after all, inside the caller's transaction: its inventory rows locked in SKU
 * order and checked, then updated. (A close's statement counts what it gives back, {@code Sql.stockReleased}; a pay's
 * what it sold, {@code Sql.stockSold}.)
 */
final class StockMoves {
  private StockMoves() {}

  /**
   * Locks the inventory rows of the orders' SKUs in SKU order, as {@link #takeSold} does first: for a transaction that
   * closes an order and then takes its units again (a reopen), before the close, so that it never waits for these rows
   * while it holds the stripes its close wrote.
   */
  static Future<Void> lockRows(SqlConnection conn, Long[] orderIds) {
    return conn.preparedQuery(Sql.LOCK_STOCK_OF_ORDERS).execute(Tuple.of((Object) orderIds)).mapEmpty();
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
}
