package ordertimeout.store;

import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlClient;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Tuple;
import io.vertx.core.json.JsonObject;
import ordertimeout.order.CloseReason;
import ordertimeout.order.CreateOutcome;
import ordertimeout.order.IdempotencyKey;
import ordertimeout.order.Order;
import ordertimeout.order.OrderItem;
import ordertimeout.order.OrderRejected.Reason;
import ordertimeout.order.OrderRejected;
import ordertimeout.order.OrderStatus;
import ordertimeout.order.PayRequest;
import ordertimeout.order.StateChange;

import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.function.Supplier;

/** Reading, paying and closing orders on request: each one transaction with compare-and-set guards. */
public final class OrderStore {
  private static final int LOCK_ATTEMPTS = 3;

  private final Pool pool;
  private final boolean reopenOnLatePayment;
  /** A stock row's holder idle in its transaction this long holds it; a shorter pause is a transaction passing through. */
  private final int idleHolderMillis;
  private final StatusCache statusCache;

  public OrderStore(Pool pool) {
    this(pool, false, Duration.ofSeconds(1), StatusCache.OFF);
  }

  /**
   * {@code reopenOnLatePayment}: a pay after a timeout close pays the order after all when its stock is still there;
   * {@code lockWait}: the pool's {@code lock_timeout}; {@code statusCache}: {@link #find} reads through it, and every
   * write here goes through {@link #writeTransaction}.
   */
  public OrderStore(Pool pool, boolean reopenOnLatePayment, Duration lockWait, StatusCache statusCache) {
    this.pool = pool;
    this.reopenOnLatePayment = reopenOnLatePayment;
    this.idleHolderMillis = (int) lockWait.dividedBy(2).toMillis();
    this.statusCache = statusCache;
  }

  /**
   * The order a create under {@code key} made, as it was answered then, for a retry of that create: null when the key
   * is not stored (never used, or its create not committed); {@link Reason#IDEMPOTENCY_KEY_REUSED} when it was stored
   * for another request body.
   */
  public Future<CreateOutcome> storedCreate(IdempotencyKey key) {
    return pool.preparedQuery(Sql.SELECT_IDEMPOTENCY_KEY).execute(Tuple.of(key.client(), key.key())).map(rows -> {
      if (rows.size() == 0) {
        return null;
      }
      Row row = rows.iterator().next();
      if (!row.getString("request_hash").equals(key.requestHash())) {
        throw new OrderRejected(Reason.IDEMPOTENCY_KEY_REUSED,
            "this Idempotency-Key was used for a different request body");
      }
      return new CreateOutcome(Order.fromJson(new JsonObject(row.getString("response_body"))), true);
    });
  }

  /**
   * The order, if {@code client} may see it: its own orders for a client, every order for an admin
   * ({@code client} null). Others' orders are answered as not found.
   */
  public Future<Order> find(long id, String client) {
    StatusCache.Entry kept = statusCache.get(id);
    if (kept != null) {
      return kept.visibleTo(client) ? Future.succeededFuture(kept.order()) : Future.failedFuture(notFound(id));
    }
    return read(id, client);
  }

  /** {@link #find}'s order as the API answers it (JSON); an order kept in the status cache is encoded once. */
  public Future<String> findJson(long id, String client) {
    StatusCache.Entry kept = statusCache.get(id);
    if (kept != null) {
      return kept.visibleTo(client) ? Future.succeededFuture(kept.json()) : Future.failedFuture(notFound(id));
    }
    return read(id, client).map(order -> order.toJson().encode());
  }

  /** The order from PostgreSQL, kept in the status cache unless a write of it ended or began meanwhile. */
  private Future<Order> read(long id, String client) {
    long ticket = statusCache.ticket(id);
    return pool.preparedQuery(Sql.SELECT_ORDER).execute(Tuple.of(id, client)).map(rows -> {
      if (rows.size() == 0) {
        throw notFound(id);
      }
      Row row = rows.iterator().next();
      Order order = toOrder(row);
      statusCache.keep(id, ticket, row.getString("client"), order);
      return order;
    });
  }

  /** Taken before an order's create is submitted, and handed to {@link #created} once the create committed. */
  public long createTicket(long id) {
    return statusCache.ticket(id);
  }

  /**
   * A new order as its create committed it, kept for its buyer's first reads, unless a write of it ended since
   * {@code ticket} was taken or is under way. Not kept when it was stored under another id than {@code ticketId} (its
   * id was taken): the ticket counts the writes of another stripe of ids.
   */
  public void created(long ticketId, long ticket, String client, Order order) {
    if (order.id() == ticketId) {
      statusCache.keep(order.id(), ticket, client, order);
    }
  }

  /**
   * Pays a group of orders (group commit): one result per request, in order, each decided on its own: the order after
   * the request and whether this request changed it, or {@link OrderRejected} when there is no such order (for that
   * client). One transaction pays every unpaid order before its deadline that no other transaction holds at that
   * moment, and answers the orders it finds paid or closed. The rest (due, or held by a close or another pay) are
   * then paid each in a transaction of its own, which waits for the row; the returned future completes at the group's
   * commit, before those answers. A due order is closed right there as a timeout (the wheel would do it a moment
   * later), or refused with {@link Reason#ORDER_PAST_DEADLINE} when its close is parked ({@link #decideLocked}). The
   * group never waits for an order row while it holds others, so it cannot deadlock with a close batch.
   * A stock row held past the pool's {@code lock_timeout} rolls the group back; then each request is paid on its own,
   * so that only the pays of that stock wait for it. A single pay that runs out of its lock wait is tried again, up to
   * {@link #LOCK_ATTEMPTS} times in all and only until the request's {@code retryUntilNanos}, before it answers the lock
   * timeout: on a hot SKU the single pays queue for its row behind one another, and a queue over the lock wait is not a
   * held row; after that, or at once when an idle transaction holds the row ({@link #stockRowHeld}), a held row answers
   * {@code row_locked} rather than wait on past the answer deadline. A pay that finds its order closed
   * is a late payment ({@link #latePay}): an order the group found closed in a transaction of its own; a single pay
   * decides it in its own transaction, the order's row still locked, also when that transaction closed the order (so
   * that the units the close gave back cannot be taken before the late pay decides on them). The orders the group
   * answered are kept in the status cache as its transaction left them, for the buyer's next read.
   */
  public Future<List<Future<StateChange>>> pay(List<PayRequest> requests) {
    Long[] ids = requests.stream().map(PayRequest::id).toArray(Long[]::new);
    return statusCache.writing(ids, write ->
            pool.withTransaction(conn -> new PayGroup(conn, ids, requests, write).run()))
        .map(results -> {
          List<Future<StateChange>> answered = new ArrayList<>(results.size());
          for (int i = 0; i < results.size(); i++) {
            PayRequest request = requests.get(i);
            Future<StateChange> result = results.get(i);
            answered.add(result == null ? payOne(request) : result.compose(change -> change.order().status()
                == OrderStatus.CLOSED ? latePay(request, change) : Future.succeededFuture(change)));
          }
          return answered;
        })
        .recover(failure -> SqlStates.is(failure, SqlStates.LOCK_NOT_AVAILABLE) && requests.size() > 1
            ? Future.succeededFuture(requests.stream().map(this::payOne).toList())
            : Future.failedFuture(failure));
  }

  /**
   * A pay that came after its order's close (the buyer's money may have been taken): decided once per order, in one
   * transaction that holds the order's row. With {@code reopenOnLatePayment}, an order closed by timeout whose units
   * are all still available is paid after all (its stock taken again, an ORDER_PAID event flagged reopened); any
   * other order closed, or a reopen without the stock, gets one ORDER_LATE_PAYMENT event, so that the shop refunds.
   * Further pays of the order change nothing and write nothing: a pay has no key of its own to tell a second payment
   * from a retry. A reopen refused for its stock fails with {@link Reason#REOPEN_INSUFFICIENT_STOCK} after the commit
   * of its event; the order stays closed.
   */
  private Future<StateChange> latePay(PayRequest request, StateChange closed) {
    return writeTransaction(new Long[] {request.id()}, conn -> decideLatePay(conn, request, closed))
        .map(late -> late.answer(request.id()));
  }

  /**
   * {@link #latePay}'s decision in the caller's transaction (which marks the order in the {@link StatusCache}): the
   * order's row locked, then its late pay noted or the order reopened. The caller answers with {@link LatePay#answer}
   * after its commit, so that the ORDER_LATE_PAYMENT event of a reopen refused for its stock is committed.
   */
  private Future<LatePay> decideLatePay(SqlConnection conn, PayRequest request, StateChange closed) {
    long id = request.id();
    String client = request.client();
    Long[] ids = {id};
    return conn.preparedQuery(Sql.LOCK_ORDER).execute(Tuple.of(id, client)).compose(rows -> {
      if (rows.size() == 0) {
        return Future.failedFuture(notFound(id));
      }
      Row row = rows.iterator().next();
      if (!OrderStatus.CLOSED.name().equals(row.getString("status")) || row.getOffsetDateTime("late_payment_at") != null) {
        return selectOrder(conn, id, client).map(order -> new LatePay(new StateChange(order, closed.changed()), false));
      }
      String reason = row.getString("close_reason");
      if (!reopenOnLatePayment || !CloseReason.TIMEOUT.name().equals(reason)) {
        return noteLatePayment(conn, id, client, reopenOnLatePayment ? "NOT_A_TIMEOUT" : "REOPEN_OFF", closed, false);
      }
      return StockMoves.takeSold(conn, ids).compose(taken -> !taken
          ? noteLatePayment(conn, id, client, "INSUFFICIENT_STOCK", closed, true)
          : conn.preparedQuery(Sql.REOPEN_PAID).execute(Tuple.of(id, reason, row.getOffsetDateTime("closed_at")))
              .compose(reopened -> changed(conn, id, client))
              .map(paid -> new LatePay(paid, false)));
    });
  }

  /** The answer to a late pay; {@code stockGone}: a reopen was refused for want of stock. */
  private record LatePay(StateChange change, boolean stockGone) {
    /** The change; {@link Reason#REOPEN_INSUFFICIENT_STOCK} for a reopen refused for its stock. */
    StateChange answer(long id) {
      if (stockGone) {
        throw new OrderRejected(Reason.REOPEN_INSUFFICIENT_STOCK, "order " + id + " was closed (TIMEOUT) and its stock "
            + "is no longer available: it was not paid; an ORDER_LATE_PAYMENT event was written for the refund");
      }
      return change;
    }
  }

  private static Future<LatePay> noteLatePayment(SqlConnection conn, long id, String client, String notReopened,
                                                 StateChange closed, boolean stockGone) {
    return conn.preparedQuery(Sql.NOTE_LATE_PAYMENT).execute(Tuple.of(id, notReopened))
        .compose(noted -> selectOrder(conn, id, client))
        .map(order -> new LatePay(new StateChange(order, closed.changed()), stockGone));
  }

  /**
   * Payment started: the close of the unpaid order waits {@code holdSeconds} past its deadline ({@code holdUntil}),
   * once per order; a second call changes nothing. An order past its deadline (and hold) is closed right there as a
   * timeout (the wheel would do it a moment later), or refused with {@link Reason#ORDER_PAST_DEADLINE} when its close
   * is parked; a paid or closed one is answered as it is.
   */
  public Future<StateChange> paymentStarted(long id, String client, int holdSeconds) {
    return writeTransaction(new Long[] {id}, conn -> startPayment(conn, id, client, holdSeconds)
        .compose(held -> held != null ? Future.succeededFuture(held) : decideLocked(conn, id, client, false,
            () -> startPayment(conn, id, client, holdSeconds).compose(again -> again != null
                ? Future.succeededFuture(again)
                : selectOrder(conn, id, client).map(order -> new StateChange(order, false))))));
  }

  /** The hold set, or null when the order is not unpaid before its deadline without a hold. */
  private static Future<StateChange> startPayment(SqlConnection conn, long id, String client, int holdSeconds) {
    return conn.preparedQuery(Sql.START_PAYMENT).execute(Tuple.of(id, client, holdSeconds))
        .compose(held -> held.size() == 1 ? changed(conn, id, client) : Future.succeededFuture(null));
  }

  /**
   * Moves the deadline of an unpaid order to {@code closeAt}, or {@code extendSeconds} past the time it would close
   * now, the later of its deadline and a payment's hold (one of them is given; a hold the new deadline passes ends),
   * by a compare-and-set on the deadline it read with the row locked: never before the database's now ({@link
   * Reason#DEADLINE_IN_PAST}), never earlier than it is ({@link Reason#DEADLINE_NOT_LATER}), never over {@code
   * ceilingSeconds} after the order's creation ({@link Reason#DEADLINE_BEYOND_CEILING}); the same deadline again
   * changes nothing. An order past its deadline (and hold) is closed right there as a timeout, or refused with
   * {@link Reason#ORDER_PAST_DEADLINE} when its close is parked; a paid or closed one is answered as it is.
   */
  public Future<StateChange> extend(long id, String client, Instant closeAt, long extendSeconds, long ceilingSeconds) {
    return writeTransaction(new Long[] {id}, conn -> conn.preparedQuery(Sql.LOCK_ORDER)
        .execute(Tuple.of(id, client)).compose(rows -> {
      if (rows.size() == 0) {
        return Future.failedFuture(notFound(id));
      }
      Row row = rows.iterator().next();
      if (!OrderStatus.UNPAID.name().equals(row.getString("status"))) {
        return selectOrder(conn, id, client).map(order -> new StateChange(order, false));
      }
      if (row.getBoolean("due")) {
        return closeDue(conn, id, client, false);
      }
      OffsetDateTime current = row.getOffsetDateTime("close_at");
      OffsetDateTime holdUntil = row.getOffsetDateTime("hold_until");
      // extendSeconds counts from the time the order would close now: a hold's end, when it holds the order longer
      Instant closesAt = holdUntil != null && holdUntil.isAfter(current) ? holdUntil.toInstant() : current.toInstant();
      Instant wanted = closeAt != null ? closeAt.truncatedTo(ChronoUnit.MICROS) : closesAt.plusSeconds(extendSeconds);
      Instant now = row.getOffsetDateTime("db_now").toInstant();
      Instant ceiling = row.getOffsetDateTime("created_at").toInstant().plusSeconds(ceilingSeconds);
      if (wanted.equals(current.toInstant())) {
        return selectOrder(conn, id, client).map(order -> new StateChange(order, false));
      }
      if (!wanted.isAfter(now)) {
        return Future.failedFuture(new OrderRejected(Reason.DEADLINE_IN_PAST,
            "the new deadline " + wanted + " is not after the database's now, " + now));
      }
      if (wanted.isBefore(current.toInstant())) {
        return Future.failedFuture(new OrderRejected(Reason.DEADLINE_NOT_LATER,
            "the new deadline " + wanted + " is before the present one, " + current.toInstant() + "; a deadline is only extended"));
      }
      if (wanted.isAfter(ceiling)) {
        return Future.failedFuture(new OrderRejected(Reason.DEADLINE_BEYOND_CEILING, "the deadline may be at most "
            + ceilingSeconds + " s after the order's creation, " + ceiling + "; " + wanted + " is later"));
      }
      return conn.preparedQuery(Sql.MOVE_DEADLINE_IF_UNCHANGED).execute(Tuple.of(id, wanted.atOffset(ZoneOffset.UTC), current))
          .compose(moved -> selectOrder(conn, id, client).map(order -> new StateChange(order, moved.size() == 1)));
    }));
  }

  /**
   * Decides a single write of an order whose first statement, made to change it only while it is unpaid and not due,
   * changed nothing: with the order's row locked now, by the transaction's one database clock. Another transaction
   * may have moved the deadline or started a hold just before, unseen by that statement, so a not-due unpaid order
   * goes to {@code tryAgain}, whose statement finds it so now; a due one is closed as a timeout ({@link #closeDue},
   * its stock rows locked first with {@code stockRowsFirst}); a paid or closed one is answered as it is.
   */
  private static Future<StateChange> decideLocked(SqlConnection conn, long id, String client, boolean stockRowsFirst,
                                                  Supplier<Future<StateChange>> tryAgain) {
    return conn.preparedQuery(Sql.LOCK_ORDER).execute(Tuple.of(id, client)).compose(rows -> {
      if (rows.size() == 0) {
        return Future.failedFuture(notFound(id));
      }
      Row row = rows.iterator().next();
      if (!OrderStatus.UNPAID.name().equals(row.getString("status"))) {
        return selectOrder(conn, id, client).map(order -> new StateChange(order, false));
      }
      return row.getBoolean("due") ? closeDue(conn, id, client, stockRowsFirst) : tryAgain.get();
    });
  }

  /**
   * Closes as a timeout (stock back) an unpaid order found due with its row locked. Only a parked close ({@link
   * CloseFailures}) is refused then: {@link Reason#ORDER_PAST_DEADLINE}, since the order is neither payable nor closed.
   * {@code stockRowsFirst}, for a transaction that goes on to reopen the order ({@link #decideLatePay}): its inventory
   * rows are locked before the close, so that the close's stripes (of inventory_released per SKU, of client_holdings
   * per client), which close batches and pays of sessions on the same stripe write too, are not held while it waits
   * for a hot SKU's row.
   */
  private static Future<StateChange> closeDue(SqlConnection conn, long id, String client, boolean stockRowsFirst) {
    Long[] ids = {id};
    Future<Void> stockLocked = stockRowsFirst ? StockMoves.lockRows(conn, ids) : Future.succeededFuture();
    return stockLocked
        .compose(locked -> conn.preparedQuery(Sql.CLOSE_DUE).execute(Tuple.of(ids, CloseReason.TIMEOUT.name())))
        .compose(closed -> closed.size() == 1
            ? changed(conn, id, client)
            : Future.failedFuture(new OrderRejected(Reason.ORDER_PAST_DEADLINE, "order " + id
                + " is past its deadline and its close is parked after failed attempts (an operator's retry closes "
                + "it); it cannot be changed")));
  }

  private Future<StateChange> payOne(PayRequest request) {
    return payOne(request, LOCK_ATTEMPTS);
  }

  private Future<StateChange> payOne(PayRequest request, int attempts) {
    return payOnce(request).recover(failure -> attempts > 1 && !request.pastRetries()
        && SqlStates.is(failure, SqlStates.LOCK_NOT_AVAILABLE)
        ? stockRowHeld(request.id()).compose(held -> held ? Future.failedFuture(failure) : payOne(request, attempts - 1))
        : Future.failedFuture(failure));
  }

  /**
   * Whether a stock row of order {@code id} is held by a transaction that sits idle ({@link Sql#LOCKED_SKUS}): a pay
   * that waited for it answers {@code row_locked} at once instead of waiting again, which kept the pool's connections
   * for seconds from the pays of every other SKU. A pay does not lock stock rows itself (migration V23) unless it
   * reopens a closed order ({@link #decideLatePay}) or closes a due one to reopen it ({@link #closeDue}), but it waits
   * for its order's row, which a close of the order holds while it waits for them.
   */
  private Future<Boolean> stockRowHeld(long id) {
    return pool.withTransaction(conn -> conn.preparedQuery(Sql.SKUS_OF_ORDER).execute(Tuple.of(id))
        .compose(skus -> {
          List<String> held = new ArrayList<>();
          skus.forEach(row -> held.add(row.getString("sku")));
          return conn.preparedQuery(Sql.LOCKED_SKUS).execute(Tuple.of(held.toArray(String[]::new), idleHolderMillis));
        })
        .map(rows -> rows.size() > 0));
  }

  private Future<StateChange> payOnce(PayRequest request) {
    long id = request.id();
    String client = request.client();
    Long[] ids = {id};
    return writeTransaction(ids, conn -> payUnpaid(conn, id, client)
        .compose(paid -> paid != null ? Future.succeededFuture(paid) : decideLocked(conn, id, client,
            reopenOnLatePayment, () -> payUnpaid(conn, id, client).compose(again -> again != null
                ? Future.succeededFuture(again)
                : Future.failedFuture(new IllegalStateException("order " + id + " is unpaid and not due with its row "
                    + "locked, and the pay did not take it")))))
        .compose(change -> change.order().status() == OrderStatus.CLOSED
            ? decideLatePay(conn, request, change)
            : Future.succeededFuture(new LatePay(change, false))))
        .map(late -> late.answer(id));
  }

  /** The order paid, or null when it is not unpaid before its deadline (or hold). */
  private static Future<StateChange> payUnpaid(SqlConnection conn, long id, String client) {
    return conn.preparedQuery(Sql.PAY).execute(Tuple.of(id, client))
        .compose(paid -> paid.size() == 1 ? changed(conn, id, client) : Future.succeededFuture(null));
  }

  /**
   * One group's transaction: pay what is free to pay, sell it, read the orders it could not pay (none when it paid them
   * all); null for what is left.
   */
  private static final class PayGroup {
    private final SqlConnection conn;
    private final Long[] ids;
    private final List<PayRequest> requests;
    private final StatusCache.Write write;
    private final Set<Long> paid = new HashSet<>();

    /** {@code ids}: the requests' orders, in their order; {@code write}: takes the orders as the group leaves them. */
    PayGroup(SqlConnection conn, Long[] ids, List<PayRequest> requests, StatusCache.Write write) {
      this.conn = conn;
      this.ids = ids;
      this.requests = requests;
      this.write = write;
    }

    Future<List<Future<StateChange>>> run() {
      String[] clients = requests.stream().map(PayRequest::client).toArray(String[]::new);
      Map<Long, Row> orders = new HashMap<>();
      return conn.preparedQuery(Sql.PAY_ORDERS).execute(Tuple.tuple().addArrayOfLong(ids).addArrayOfString(clients))
          .compose(rows -> {
            rows.forEach(row -> orders.put(row.getLong("id"), row));
            paid.addAll(orders.keySet());
            Long[] notPaid = Arrays.stream(ids).distinct().filter(id -> !orders.containsKey(id)).toArray(Long[]::new);
            return notPaid.length == 0
                ? Future.succeededFuture(orders)
                : conn.preparedQuery(Sql.SELECT_ORDERS).execute(Tuple.of((Object) notPaid)).map(found -> {
                  found.forEach(row -> orders.put(row.getLong("id"), row));
                  return orders;
                });
          })
          .map(this::results);
    }

    /** In request order; of several requests for an order this group paid, the first one reports the change. */
    private List<Future<StateChange>> results(Map<Long, Row> orders) {
      List<Future<StateChange>> results = new ArrayList<>(requests.size());
      for (PayRequest request : requests) {
        Row row = orders.get(request.id());
        if (row == null || (request.client() != null && !request.client().equals(row.getString("client")))) {
          results.add(Future.failedFuture(notFound(request.id())));
          continue;
        }
        Order order = toOrder(row);
        boolean changedHere = paid.remove(request.id());
        if (changedHere || order.status() != OrderStatus.UNPAID) {
          write.committed(row.getString("client"), order);
          results.add(Future.succeededFuture(new StateChange(order, changedHere)));
        } else {
          results.add(null); // due, or held by another transaction: paid on its own
        }
      }
      return results;
    }
  }

  /** Closes an unpaid order on request (user cancel or admin), giving its stock back. */
  public Future<StateChange> closeOnRequest(long id, CloseReason reason, String client) {
    Long[] ids = {id};
    return writeTransaction(ids, conn -> closeOnRequest(conn, ids, reason, client)
        .compose(closed -> closed.length == 1
            ? changed(conn, id, client)
            : selectOrder(conn, id, client).map(order -> new StateChange(order, false))));
  }

  /**
   * The close on request in the caller's transaction (which marks {@code ids} in the {@link StatusCache}), for the
   * single close and the bulk close alike: the compare-and-set of the unpaid orders among {@code ids} ({@code client}'s only, any client's for null), their log
   * lines and ORDER_CLOSED events, and their stock given back. The ids it closed.
   */
  static Future<Long[]> closeOnRequest(SqlConnection conn, Long[] ids, CloseReason reason, String client) {
    return conn.preparedQuery(Sql.CLOSE_ON_REQUEST).execute(Tuple.of(ids, reason.name(), client)).map(rows -> {
      Long[] closed = new Long[rows.size()];
      int i = 0;
      for (Row row : rows) closed[i++] = row.getLong("id");
      return closed;
    });
  }

  /** One transaction that may change orders {@code ids}: marked in the status cache until it ended. */
  private <T> Future<T> writeTransaction(Long[] ids, Function<SqlConnection, Future<T>> work) {
    return statusCache.writing(ids, () -> pool.withTransaction(work));
  }

  private static Future<StateChange> changed(SqlConnection conn, long id, String client) {
    return selectOrder(conn, id, client).map(order -> new StateChange(order, true));
  }

  private static Future<Order> selectOrder(SqlClient sql, long id, String client) {
    return sql.preparedQuery(Sql.SELECT_ORDER).execute(Tuple.of(id, client)).map(rows -> {
      if (rows.size() == 0) {
        throw notFound(id);
      }
      return toOrder(rows.iterator().next());
    });
  }

  private static OrderRejected notFound(long id) {
    return new OrderRejected(Reason.ORDER_NOT_FOUND, "no order " + id);
  }

  /**
   * A close as the dashboard lists it; {@code latenessMillis} is closed_at - close_at (or - hold_until, when a started
   * payment held the close past the deadline; negative for a close on request).
   */
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
        throw notFound(id);
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
        instant(row.getOffsetDateTime("closed_at")),
        instant(row.getOffsetDateTime("hold_until")));
  }

  private static java.time.Instant instant(OffsetDateTime time) {
    return time == null ? null : time.toInstant();
  }
}
