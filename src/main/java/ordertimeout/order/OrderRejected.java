package ordertimeout.order;

/** A request the order rules turn down; nothing was changed. The HTTP edge maps each reason to a status and code. */
public final class OrderRejected extends RuntimeException {
  public enum Reason {
    ORDER_NOT_FOUND,
    UNKNOWN_SKU,
    INSUFFICIENT_STOCK,
    TOO_MANY_UNPAID_ORDERS,
    CLIENT_UNPAID_CAP,
    CLIENT_UNITS_CAP,
    REQUEST_IN_PROGRESS,
    IDEMPOTENCY_KEY_REUSED,
    ORDER_CLOSED,
    ORDER_PAID,
    INVENTORY_NOT_FOUND,
    STOCK_OUT_OF_RANGE,
    PRECONDITION_FAILED,
    PRECONDITION_REQUIRED,
    /** A retry of an order that is not parked. */
    ORDER_NOT_PARKED,
    /** No unique id to give the order now (a transient condition of the node: answered 503). */
    ORDER_ID_UNAVAILABLE,
    /** The database that a decision needs cannot be reached (answered 503 database_unavailable). */
    DATABASE_UNAVAILABLE,
    /** Not started, or not decided, before its deadline; nothing was stored. */
    OVERLOADED,
    /** A row it needs stayed locked by another transaction past the lock wait; nothing was stored. */
    ROW_LOCKED,
    /** A late pay of an order closed by timeout whose stock is gone: not paid (its refund event is written). */
    REOPEN_INSUFFICIENT_STOCK,
    /** A deadline change to a time the database clock has passed. */
    DEADLINE_IN_PAST,
    /** A deadline change to before the present deadline: deadlines are only extended. */
    DEADLINE_NOT_LATER,
    /** A deadline change past the ceiling after the order's creation. */
    DEADLINE_BEYOND_CEILING,
    /** A pay, payment started or deadline change of an unpaid order past its deadline whose close is parked. */
    ORDER_PAST_DEADLINE
  }

  private final Reason reason;

  public OrderRejected(Reason reason, String detail) {
    super(detail, null, false, false);
    this.reason = reason;
  }

  public Reason reason() {
    return reason;
  }
}
