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
    INVENTORY_NOT_FOUND
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
