package ordertimeout.store;

import io.vertx.core.Future;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Tuple;

/**
 * Moves the stock of orders that were just closed or paid, inside the caller's transaction. Locks the
 * inventory rows in SKU order first: concurrent batches touching many SKUs would deadlock otherwise.
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

  private static Future<Void> move(SqlConnection conn, Long[] orderIds, String update) {
    if (orderIds.length == 0) {
      return Future.succeededFuture();
    }
    Tuple ids = Tuple.of(orderIds);
    return conn.preparedQuery(Sql.LOCK_STOCK_OF_ORDERS).execute(ids)
        .compose(locked -> conn.preparedQuery(update).execute(ids))
        .mapEmpty();
  }
}
