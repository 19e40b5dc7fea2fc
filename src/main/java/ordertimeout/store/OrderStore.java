package ordertimeout.store;

import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlClient;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Tuple;
import ordertimeout.order.CloseReason;
import ordertimeout.order.Digests;
import ordertimeout.order.NewOrder;
import ordertimeout.order.Order;
import ordertimeout.order.OrderItem;
import ordertimeout.order.OrderRejected;
import ordertimeout.order.OrderRejected.Reason;
import ordertimeout.order.OrderStatus;

import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** The order operations the HTTP intake needs, each one transaction with compare-and-set guards. */
public final class OrderStore {
  private final Pool pool;

  public OrderStore(Pool pool) {
    this.pool = pool;
  }

  /** Idempotency keys are scoped per API client; {@code requestHash} tells a replay from a reuse. */
  public record IdempotencyKey(String client, String key, String requestHash) {}

  /** What to answer: the stored response on a replay ({@code created} null), or the new order. */
  public record CreateOutcome(int status, String body, Order created) {}

  /** The order after a pay or close request, and whether this request changed it. */
  public record StateChange(Order order, boolean changed) {}

  public record Stock(String sku, long available, long reserved) {}

  /**
   * Stores the order, its items, its reservation, its idempotency key and its ORDER_CREATED event in
   * one transaction. Rejections roll everything back.
   */
  public Future<CreateOutcome> create(NewOrder order, IdempotencyKey idempotency, int maxUnpaidPerUser) {
    return pool.withTransaction(conn -> conn.preparedQuery(Sql.TRY_LOCK_IDEMPOTENCY_KEY)
        .execute(Tuple.of(lockKey("idempotency", idempotency.client(), idempotency.key())))
        .compose(rows -> {
          if (!rows.iterator().next().getBoolean("locked")) {
            throw new OrderRejected(Reason.REQUEST_IN_PROGRESS, "a request with this Idempotency-Key is still running");
          }
          return conn.preparedQuery(Sql.SELECT_IDEMPOTENCY_KEY).execute(Tuple.of(idempotency.client(), idempotency.key()));
        })
        .compose(rows -> {
          if (rows.size() > 0) {
            return Future.succeededFuture(replay(rows.iterator().next(), idempotency));
          }
          return insertNew(conn, order, idempotency, maxUnpaidPerUser);
        }));
  }

  private static CreateOutcome replay(Row stored, IdempotencyKey idempotency) {
    if (!stored.getString("request_hash").equals(idempotency.requestHash())) {
      throw new OrderRejected(Reason.IDEMPOTENCY_KEY_REUSED,
          "this Idempotency-Key was used for a different request body");
    }
    return new CreateOutcome(stored.getInteger("response_status"), stored.getString("response_body"), null);
  }

  private Future<CreateOutcome> insertNew(SqlConnection conn, NewOrder order, IdempotencyKey idempotency, int maxUnpaidPerUser) {
    String[] skus = order.items().stream().map(OrderItem::sku).toArray(String[]::new);
    Integer[] qtys = order.items().stream().map(OrderItem::qty).toArray(Integer[]::new);
    String client = idempotency.client();
    return conn.preparedQuery(Sql.LOCK_USER).execute(Tuple.of(lockKey("user", client, order.userId())))
        .compose(locked -> conn.preparedQuery(Sql.COUNT_UNPAID_OF_USER).execute(Tuple.of(client, order.userId())))
        .compose(rows -> {
          long unpaid = rows.iterator().next().getLong("unpaid");
          if (unpaid >= maxUnpaidPerUser) {
            throw new OrderRejected(Reason.TOO_MANY_UNPAID_ORDERS,
                "user " + order.userId() + " already has " + unpaid + " unpaid orders (at most " + maxUnpaidPerUser + ")");
          }
          return conn.preparedQuery(Sql.LOCK_STOCK_BY_SKU).execute(Tuple.of(skus));
        })
        .compose(rows -> {
          Map<String, Long> available = new HashMap<>();
          rows.forEach(row -> available.put(row.getString("sku"), row.getLong("available")));
          for (OrderItem item : order.items()) {
            Long onHand = available.get(item.sku());
            if (onHand == null) {
              throw new OrderRejected(Reason.UNKNOWN_SKU, "unknown SKU " + item.sku());
            }
            if (onHand < item.qty()) {
              throw new OrderRejected(Reason.INSUFFICIENT_STOCK,
                  "SKU " + item.sku() + " has " + onHand + " available, " + item.qty() + " requested");
            }
          }
          return conn.preparedQuery(Sql.RESERVE_STOCK).execute(Tuple.tuple().addArrayOfString(skus).addArrayOfInteger(qtys));
        })
        .compose(reserved -> conn.preparedQuery(Sql.INSERT_ORDER).execute(Tuple.tuple()
            .addLong(order.id())
            .addInteger(order.shard())
            .addString(order.userId())
            .addString(order.category())
            .addInteger(order.timeoutSeconds())
            .addInteger(order.remindAfterSeconds().orElse(null))
            .addArrayOfString(skus)
            .addArrayOfInteger(qtys)
            .addString(client)))
        .compose(rows -> {
          Row row = rows.iterator().next();
          Order created = new Order(order.id(), order.userId(), order.category(), OrderStatus.UNPAID, null,
              order.items(), row.getOffsetDateTime("created_at").toInstant(),
              row.getOffsetDateTime("close_at").toInstant(), instant(row.getOffsetDateTime("remind_at")), null, null);
          String body = created.toJson().encode();
          return conn.preparedQuery(Sql.INSERT_IDEMPOTENCY_KEY)
              .execute(Tuple.of(idempotency.client(), idempotency.key(), idempotency.requestHash(), 201, body, order.id()))
              .map(inserted -> new CreateOutcome(201, body, created));
        });
  }

  /**
   * The order, if {@code client} may see it: its own orders for a client, every order for an admin
   * ({@code client} null). Others' orders are answered as not found.
   */
  public Future<Order> find(long id, String client) {
    return selectOrder(pool, id, client);
  }

  /**
   * Pays an unpaid order before its deadline; the reservation becomes a sale. An order found unpaid
   * after its deadline is closed right here as a timeout (the wheel would do it a moment later).
   */
  public Future<StateChange> pay(long id, String client) {
    Long[] ids = {id};
    return pool.withTransaction(conn -> conn.preparedQuery(Sql.PAY).execute(Tuple.of(id, client))
        .compose(paid -> paid.size() == 1
            ? StockMoves.sell(conn, ids).compose(sold -> changed(conn, id, client))
            : selectOrder(conn, id, client).compose(order -> order.status() != OrderStatus.UNPAID
                ? Future.succeededFuture(new StateChange(order, false))
                : conn.preparedQuery(Sql.CLOSE_DUE).execute(Tuple.of(ids, CloseReason.TIMEOUT.name()))
                    .compose(closed -> closed.size() == 1
                        ? StockMoves.release(conn, ids).compose(released -> changed(conn, id, client))
                        : selectOrder(conn, id, client).map(now -> new StateChange(now, false))))));
  }

  /** Closes an unpaid order on request (user cancel or admin), giving its stock back. */
  public Future<StateChange> closeOnRequest(long id, CloseReason reason, String client) {
    Long[] ids = {id};
    return pool.withTransaction(conn -> conn.preparedQuery(Sql.CLOSE_ON_REQUEST).execute(Tuple.of(ids, reason.name(), client))
        .compose(closed -> closed.size() == 1
            ? StockMoves.release(conn, ids).compose(released -> changed(conn, id, client))
            : selectOrder(conn, id, client).map(order -> new StateChange(order, false))));
  }

  private static Future<StateChange> changed(SqlConnection conn, long id, String client) {
    return selectOrder(conn, id, client).map(order -> new StateChange(order, true));
  }

  private static Future<Order> selectOrder(SqlClient sql, long id, String client) {
    return sql.preparedQuery(Sql.SELECT_ORDER).execute(Tuple.of(id, client)).map(rows -> {
      if (rows.size() == 0) {
        throw new OrderRejected(Reason.ORDER_NOT_FOUND, "no order " + id);
      }
      return toOrder(rows.iterator().next());
    });
  }

  public Future<Void> ping() {
    return pool.query(Sql.PING).execute().mapEmpty();
  }

  public Future<Stock> stock(String sku) {
    return pool.preparedQuery(Sql.SELECT_INVENTORY).execute(Tuple.of(sku)).map(rows -> {
      if (rows.size() == 0) {
        throw new OrderRejected(Reason.INVENTORY_NOT_FOUND, "no inventory for SKU " + sku);
      }
      return toStock(rows.iterator().next());
    });
  }

  public Future<Stock> setAvailable(String sku, long available) {
    return pool.preparedQuery(Sql.UPSERT_INVENTORY).execute(Tuple.of(sku, available))
        .map(rows -> toStock(rows.iterator().next()));
  }

  private static Stock toStock(Row row) {
    return new Stock(row.getString("sku"), row.getLong("available"), row.getLong("reserved"));
  }

  private static Order toOrder(Row row) {
    String[] skus = row.getArrayOfStrings("skus");
    Integer[] qtys = row.getArrayOfIntegers("qtys");
    List<OrderItem> items = new ArrayList<>(skus.length);
    for (int i = 0; i < skus.length; i++) {
      items.add(new OrderItem(skus[i], qtys[i]));
    }
    String reason = row.getString("close_reason");
    return new Order(
        row.getLong("id"),
        row.getString("user_id"),
        row.getString("category"),
        OrderStatus.valueOf(row.getString("status")),
        reason == null ? null : CloseReason.valueOf(reason),
        List.copyOf(items),
        instant(row.getOffsetDateTime("created_at")),
        instant(row.getOffsetDateTime("close_at")),
        instant(row.getOffsetDateTime("remind_at")),
        instant(row.getOffsetDateTime("paid_at")),
        instant(row.getOffsetDateTime("closed_at")));
  }

  private static java.time.Instant instant(OffsetDateTime time) {
    return time == null ? null : time.toInstant();
  }

  /** A 64-bit key for a transaction-scoped advisory lock; a rare collision only serialises two unrelated requests. */
  static long lockKey(String... parts) {
    byte[] hash = Digests.sha256(parts);
    long key = 0;
    for (int i = 0; i < 8; i++) {
      key = (key << 8) | (hash[i] & 0xff);
    }
    return key;
  }
}
