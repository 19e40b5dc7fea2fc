package ordertimeout.store;

import io.vertx.core.AsyncResult;
import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlClient;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Tuple;
import ordertimeout.order.CloseReason;
import ordertimeout.order.Order;
import ordertimeout.order.OrderItem;
import ordertimeout.order.OrderRejected;
import ordertimeout.order.OrderRejected.Reason;
import ordertimeout.order.OrderStatus;

import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** Reading, paying and closing orders on request, and stock levels: each one transaction with compare-and-set guards. */
public final class OrderStore {
  private final Pool pool;

  public OrderStore(Pool pool) {
    this.pool = pool;
  }

  /** The order after a pay or close request, and whether this request changed it. */
  public record StateChange(Order order, boolean changed) {}

  public record Stock(String sku, long available, long reserved) {}

  /**
   * The order, if {@code client} may see it: its own orders for a client, every order for an admin
   * ({@code client} null). Others' orders are answered as not found.
   */
  public Future<Order> find(long id, String client) {
    return selectOrder(pool, id, client);
  }

  /** A pay request: the order, and the client asking (null for an admin). */
  public record PayRequest(long id, String client) {}

  /**
   * Pays a group of orders in one transaction (group commit): each unpaid order before its deadline is paid and its
   * reservation becomes a sale. Each request is decided on its own, one result per request in order: the order after
   * it and whether this request changed it, or {@link OrderRejected} when there is no such order (for that client).
   * An order found unpaid after its deadline is closed right here as a timeout (the wheel would do it a moment later).
   */
  public Future<List<AsyncResult<StateChange>>> pay(List<PayRequest> requests) {
    return pool.withTransaction(conn -> new PayGroup(conn, requests).run());
  }

  /** One group's transaction: pay, sell, close the due ones among the rest, then read every order once. */
  private static final class PayGroup {
    private final SqlConnection conn;
    private final List<PayRequest> requests;
    private final Set<Long> changed = new HashSet<>();

    PayGroup(SqlConnection conn, List<PayRequest> requests) {
      this.conn = conn;
      this.requests = requests;
    }

    Future<List<AsyncResult<StateChange>>> run() {
      List<PayRequest> byId = new ArrayList<>(requests);
      byId.sort(Comparator.comparingLong(PayRequest::id));
      Long[] ids = byId.stream().map(PayRequest::id).toArray(Long[]::new);
      String[] clients = byId.stream().map(PayRequest::client).toArray(String[]::new);
      return conn.preparedQuery(Sql.PAY_ORDERS).execute(Tuple.tuple().addArrayOfLong(ids).addArrayOfString(clients))
          .compose(rows -> {
            Long[] paid = new Long[rows.size()];
            int i = 0;
            for (Row row : rows) paid[i++] = row.getLong("id");
            changed.addAll(List.of(paid));
            return StockMoves.sell(conn, paid);
          })
          .compose(sold -> closeDueAmongTheRest())
          .compose(closed -> selectOrders(distinctIds()))
          .map(this::results);
    }

    /** Orders not paid here that are unpaid and visible to their requester are due: closed now as timeouts. */
    private Future<Void> closeDueAmongTheRest() {
      Long[] rest = requests.stream().map(PayRequest::id).filter(id -> !changed.contains(id)).distinct().toArray(Long[]::new);
      if (rest.length == 0) return Future.succeededFuture();
      return selectOrders(rest).compose(orders -> {
        Long[] due = requests.stream()
            .filter(request -> isVisible(orders.get(request.id()), request) && orders.get(request.id()).order().status() == OrderStatus.UNPAID)
            .map(PayRequest::id).distinct().toArray(Long[]::new);
        if (due.length == 0) return Future.succeededFuture();
        return conn.preparedQuery(Sql.CLOSE_DUE).execute(Tuple.of(due, CloseReason.TIMEOUT.name())).compose(rows -> {
          Long[] closed = new Long[rows.size()];
          int i = 0;
          for (Row row : rows) closed[i++] = row.getLong("id");
          changed.addAll(List.of(closed));
          return StockMoves.release(conn, closed);
        });
      });
    }

    private Long[] distinctIds() {
      return requests.stream().map(PayRequest::id).distinct().toArray(Long[]::new);
    }

    private Future<Map<Long, OwnedOrder>> selectOrders(Long[] ids) {
      return conn.preparedQuery(Sql.SELECT_ORDERS).execute(Tuple.of((Object) ids)).map(rows -> {
        Map<Long, OwnedOrder> orders = new HashMap<>();
        rows.forEach(row -> orders.put(row.getLong("id"), new OwnedOrder(toOrder(row), row.getString("client"))));
        return orders;
      });
    }

    /** In request order; of several requests for an order this group changed, the first one reports the change. */
    private List<AsyncResult<StateChange>> results(Map<Long, OwnedOrder> orders) {
      List<AsyncResult<StateChange>> results = new ArrayList<>(requests.size());
      for (PayRequest request : requests) {
        OwnedOrder owned = orders.get(request.id());
        results.add(isVisible(owned, request)
            ? Future.succeededFuture(new StateChange(owned.order(), changed.remove(request.id())))
            : Future.failedFuture(new OrderRejected(Reason.ORDER_NOT_FOUND, "no order " + request.id())));
      }
      return results;
    }

    private static boolean isVisible(OwnedOrder owned, PayRequest request) {
      return owned != null && (request.client() == null || request.client().equals(owned.client()));
    }
  }

  private record OwnedOrder(Order order, String client) {}

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

  /** A close as the dashboard lists it; {@code latenessMillis} is closed_at - close_at (negative for a close on request). */
  public record RecentClose(long orderId, String reason, java.time.Instant closeAt, java.time.Instant closedAt, long latenessMillis) {}

  /** A line of an order's log. */
  public record LogLine(String event, String detail, java.time.Instant at) {}

  /** The {@code limit} latest closes, newest first. */
  public Future<List<RecentClose>> latestCloses(int limit) {
    return pool.preparedQuery(Sql.LATEST_CLOSES).execute(Tuple.of(limit)).map(rows -> {
      List<RecentClose> closes = new ArrayList<>(rows.size());
      for (Row row : rows) {
        Long lateness = row.getLong("lateness_millis");
        closes.add(new RecentClose(row.getLong("order_id"), row.getString("close_reason"),
            instant(row.getOffsetDateTime("close_at")), instant(row.getOffsetDateTime("closed_at")),
            lateness == null ? 0 : lateness));
      }
      return closes;
    });
  }

  /** Every log line of an order, oldest first (any client's order: for admins); 404 when there is no such order. */
  public Future<List<LogLine>> orderLog(long id) {
    return pool.preparedQuery(Sql.ORDER_LOG).execute(Tuple.of(id)).map(rows -> {
      if (rows.size() == 0) {
        throw new OrderRejected(Reason.ORDER_NOT_FOUND, "no order " + id);
      }
      List<LogLine> lines = new ArrayList<>(rows.size());
      for (Row row : rows) {
        if (row.getString("event") != null) {
          lines.add(new LogLine(row.getString("event"), row.getString("detail"), instant(row.getOffsetDateTime("at"))));
        }
      }
      return lines;
    });
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
}
