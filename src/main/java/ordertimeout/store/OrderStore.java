package ordertimeout.store;

import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlClient;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Tuple;
import ordertimeout.order.CloseReason;
import ordertimeout.order.Order;
import ordertimeout.order.OrderItem;
import ordertimeout.order.OrderRejected.Reason;
import ordertimeout.order.OrderRejected;
import ordertimeout.order.OrderStatus;
import ordertimeout.order.PayRequest;
import ordertimeout.order.StateChange;

import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** Reading, paying and closing orders on request: each one transaction with compare-and-set guards. */
public final class OrderStore {
  private static final int LOCK_ATTEMPTS = 3;

  private final Pool pool;

  public OrderStore(Pool pool) {
    this.pool = pool;
  }

  /**
   * The order, if {@code client} may see it: its own orders for a client, every order for an admin
   * ({@code client} null). Others' orders are answered as not found.
   */
  public Future<Order> find(long id, String client) {
    return selectOrder(pool, id, client);
  }

  /**
   * Pays a group of orders (group commit): one result per request, in order, each decided on its own: the order after
   * the request and whether this request changed it, or {@link OrderRejected} when there is no such order (for that
   * client). One transaction pays every unpaid order before its deadline that no other transaction holds at that
   * moment, and answers the orders it finds paid or closed. The rest (due, or held by a close or another pay) are
   * then paid each in a transaction of its own, which waits for the row; the returned future completes at the group's
   * commit, before those answers. A due order is closed right there as a timeout (the wheel would do it a moment
   * later). The group never waits for an order row while it holds others, so it cannot deadlock with a close batch.
   * A stock row held past the pool's {@code lock_timeout} rolls the group back; then each request is paid on its own,
   * so that only the pays of that stock wait for it. A single pay that runs out of its lock wait is tried again, up to
   * {@link #LOCK_ATTEMPTS} times in all, before it answers the lock timeout: on a hot SKU the single pays queue for
   * its row behind one another, and a queue over the lock wait is not a held row.
   */
  public Future<List<Future<StateChange>>> pay(List<PayRequest> requests) {
    return pool.withTransaction(conn -> new PayGroup(conn, requests).run())
        .map(results -> {
          for (int i = 0; i < results.size(); i++) {
            if (results.get(i) == null) results.set(i, payOne(requests.get(i)));
          }
          return results;
        })
        .recover(failure -> SqlStates.is(failure, SqlStates.LOCK_NOT_AVAILABLE) && requests.size() > 1
            ? Future.succeededFuture(requests.stream().map(this::payOne).toList())
            : Future.failedFuture(failure));
  }

  private Future<StateChange> payOne(PayRequest request) {
    return payOne(request, LOCK_ATTEMPTS);
  }

  private Future<StateChange> payOne(PayRequest request, int attempts) {
    return payOnce(request).recover(failure -> attempts > 1 && SqlStates.is(failure, SqlStates.LOCK_NOT_AVAILABLE)
        ? payOne(request, attempts - 1)
        : Future.failedFuture(failure));
  }

  private Future<StateChange> payOnce(PayRequest request) {
    long id = request.id();
    String client = request.client();
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

  /** One group's transaction: pay what is free to pay, sell it, read every order once; null for what is left. */
  private static final class PayGroup {
    private final SqlConnection conn;
    private final List<PayRequest> requests;
    private final Set<Long> paid = new HashSet<>();

    PayGroup(SqlConnection conn, List<PayRequest> requests) {
      this.conn = conn;
      this.requests = requests;
    }

    Future<List<Future<StateChange>>> run() {
      Long[] ids = requests.stream().map(PayRequest::id).toArray(Long[]::new);
      String[] clients = requests.stream().map(PayRequest::client).toArray(String[]::new);
      return conn.preparedQuery(Sql.PAY_ORDERS).execute(Tuple.tuple().addArrayOfLong(ids).addArrayOfString(clients))
          .compose(rows -> {
            Long[] paidIds = new Long[rows.size()];
            int i = 0;
            for (Row row : rows) paidIds[i++] = row.getLong("id");
            paid.addAll(List.of(paidIds));
            return StockMoves.sell(conn, paidIds);
          })
          .compose(sold -> conn.preparedQuery(Sql.SELECT_ORDERS)
              .execute(Tuple.of((Object) Arrays.stream(ids).distinct().toArray(Long[]::new))))
          .map(rows -> {
            Map<Long, Row> orders = new HashMap<>();
            rows.forEach(row -> orders.put(row.getLong("id"), row));
            return results(orders);
          });
    }

    /** In request order; of several requests for an order this group paid, the first one reports the change. */
    private List<Future<StateChange>> results(Map<Long, Row> orders) {
      List<Future<StateChange>> results = new ArrayList<>(requests.size());
      for (PayRequest request : requests) {
        Row row = orders.get(request.id());
        if (row == null || (request.client() != null && !request.client().equals(row.getString("client")))) {
          results.add(Future.failedFuture(new OrderRejected(Reason.ORDER_NOT_FOUND, "no order " + request.id())));
          continue;
        }
        Order order = toOrder(row);
        boolean changedHere = paid.remove(request.id());
        results.add(changedHere || order.status() != OrderStatus.UNPAID
            ? Future.succeededFuture(new StateChange(order, changedHere))
            : null); // due, or held by another transaction: paid on its own
      }
      return results;
    }
  }

  /** Closes an unpaid order on request (user cancel or admin), giving its stock back. */
  public Future<StateChange> closeOnRequest(long id, CloseReason reason, String client) {
    return pool.withTransaction(conn -> closeOnRequest(conn, new Long[] {id}, reason, client)
        .compose(closed -> closed.length == 1
            ? changed(conn, id, client)
            : selectOrder(conn, id, client).map(order -> new StateChange(order, false))));
  }

  /**
   * The close on request in the caller's transaction, for the single close and the bulk close alike: the
   * compare-and-set of the unpaid orders among {@code ids} ({@code client}'s only, any client's for null), their log
   * lines and ORDER_CLOSED events, and their stock given back. The ids it closed.
   */
  static Future<Long[]> closeOnRequest(SqlConnection conn, Long[] ids, CloseReason reason, String client) {
    return conn.preparedQuery(Sql.CLOSE_ON_REQUEST).execute(Tuple.of(ids, reason.name(), client)).compose(rows -> {
      Long[] closed = new Long[rows.size()];
      int i = 0;
      for (Row row : rows) closed[i++] = row.getLong("id");
      return StockMoves.release(conn, closed).map(released -> closed);
    });
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

  static Order toOrder(Row row) {
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
