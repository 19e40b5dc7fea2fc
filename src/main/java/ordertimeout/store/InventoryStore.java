package ordertimeout.store;

import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Tuple;
import ordertimeout.order.IdempotencyKey;
import ordertimeout.order.OrderRejected.Reason;
import ordertimeout.order.OrderRejected;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * Stock levels and the admins' changes of them. A change cannot lose another: it is relative ({@link #adjust}) or
 * conditional on the version its author read ({@link #setIfVersion}), and each is logged with who made it by the
 * statement that makes it.
 */
public final class InventoryStore {
  private final Pool pool;

  public InventoryStore(Pool pool) {
    this.pool = pool;
  }

  /**
   * A SKU's stock; {@code version} tells this state of the row from every other (the ETag), null in a replayed
   * answer, which may be older than the row.
   */
  public record Stock(String sku, long available, long reserved, String version) {
    public JsonObject toJson() {
      return new JsonObject().put("sku", sku).put("available", available).put("reserved", reserved);
    }

    static Stock replayed(String body) {
      JsonObject json = new JsonObject(body);
      return new Stock(json.getString("sku"), json.getLong("available"), json.getLong("reserved"), null);
    }
  }

  /** An admin's change of a SKU's available units; {@code availableBefore} is null for the one that created the SKU. */
  public record Change(String client, String operation, Long availableBefore, long availableAfter, long delta,
                       Instant at) {}

  public Future<Stock> stock(String sku) {
    return pool.preparedQuery(Sql.SELECT_INVENTORY).execute(Tuple.of(sku)).map(rows -> {
      if (rows.size() == 0) {
        throw notFound(sku);
      }
      return toStock(rows.iterator().next());
    });
  }

  /** Creates the SKU's row; {@link Reason#PRECONDITION_REQUIRED} when it has one, which only a conditional set may change. */
  public Future<Stock> create(String sku, long available, String client) {
    return pool.preparedQuery(Sql.CREATE_INVENTORY).execute(Tuple.of(sku, available, client)).map(rows -> {
      if (rows.size() == 0) {
        throw new OrderRejected(Reason.PRECONDITION_REQUIRED,
            "SKU " + sku + " has stock already: send If-Match with the ETag of a GET, or adjust it by a delta");
      }
      return toStock(rows.iterator().next());
    });
  }

  /**
   * Sets the available units if the row is still at one of {@code versions} (null: at whatever version);
   * {@link Reason#PRECONDITION_FAILED} when it moved on or there is no such SKU.
   */
  public Future<Stock> setIfVersion(String sku, long available, String[] versions, String client) {
    return pool.preparedQuery(Sql.SET_AVAILABLE_IF_VERSION)
        .execute(Tuple.tuple().addString(sku).addLong(available).addArrayOfString(versions).addString(client))
        .map(rows -> {
          if (rows.size() == 0) {
            throw new OrderRejected(Reason.PRECONDITION_FAILED,
                "SKU " + sku + " changed since that version (or has no stock): GET it again and decide anew");
          }
          return toStock(rows.iterator().next());
        });
  }

  /**
   * Adds {@code delta} to the available units, at most up to {@code maxAvailable} and never below zero, once per
   * idempotency key: a retry with the key answers the stored result, the key with another request
   * {@link Reason#IDEMPOTENCY_KEY_REUSED}, and while the first request with the key runs
   * {@link Reason#REQUEST_IN_PROGRESS}. The key shares the creates' table and lock, so a key is one request's, whichever
   * route it came to first. A refused adjust stores nothing.
   */
  public Future<Stock> adjust(String sku, long delta, long maxAvailable, IdempotencyKey idempotency) {
    return pool.withTransaction(conn -> IdempotencyKeys.lockAndFind(conn, idempotency)
        .compose(stored -> stored != null
            ? Future.succeededFuture(Stock.replayed(stored))
            : conn.preparedQuery(Sql.ADJUST_AVAILABLE).execute(Tuple.of(sku, delta, maxAvailable, idempotency.client()))
                .compose(adjusted -> adjusted.size() == 1
                    ? storeKey(conn, toStock(adjusted.iterator().next()), idempotency)
                    : refuseAdjust(conn, sku, delta, maxAvailable))));
  }

  private static Future<Stock> storeKey(SqlConnection conn, Stock stock, IdempotencyKey idempotency) {
    return IdempotencyKeys.store(conn, idempotency, 200, stock.toJson().encode()).map(stock);
  }

  /** Why the adjust changed nothing: no such SKU, or the result out of range (read after the fact, for the message). */
  private static Future<Stock> refuseAdjust(SqlConnection conn, String sku, long delta, long maxAvailable) {
    return conn.preparedQuery(Sql.SELECT_INVENTORY).execute(Tuple.of(sku)).map(rows -> {
      if (rows.size() == 0) {
        throw notFound(sku);
      }
      long available = rows.iterator().next().getLong("available");
      throw new OrderRejected(Reason.STOCK_OUT_OF_RANGE, "SKU " + sku + " has " + available + " available: "
          + (delta < 0 ? "taking away " + -delta + " would leave less than none" : "adding " + delta + " would exceed " + maxAvailable));
    });
  }

  /** The SKU's latest {@code limit} changes, newest first. */
  public Future<List<Change>> log(String sku, int limit) {
    return pool.preparedQuery(Sql.INVENTORY_LOG).execute(Tuple.of(sku, limit)).map(rows -> {
      if (rows.size() == 0) {
        throw notFound(sku);
      }
      List<Change> changes = new ArrayList<>(rows.size());
      for (Row row : rows) {
        if (row.getLong("id") != null) {
          changes.add(new Change(row.getString("client"), row.getString("operation"),
              row.getLong("available_before"), row.getLong("available_after"), row.getLong("delta"),
              row.getOffsetDateTime("at").toInstant()));
        }
      }
      return changes;
    });
  }

  private static OrderRejected notFound(String sku) {
    return new OrderRejected(Reason.INVENTORY_NOT_FOUND, "no inventory for SKU " + sku);
  }

  private static Stock toStock(Row row) {
    return new Stock(row.getString("sku"), row.getLong("available"), row.getLong("reserved"), row.getString("version"));
  }
}
