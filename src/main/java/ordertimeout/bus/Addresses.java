package ordertimeout.bus;

/** Every event-bus address of the service. */
public final class Addresses {
  /** {@link ordertimeout.order.Deadlines}: put deadlines and reminders into the wheel. */
  public static final String TIMER_SCHEDULE = "timer.schedule";
  /** {@link CancelTimers}: drop an order's timers (it was paid or closed). */
  public static final String TIMER_CANCEL = "timer.cancel";
  /** {@link DueOrders}: close these orders if still unpaid and due; replies with the number closed. */
  public static final String CLOSE_DUE = "close.due";
  /** {@link DueOrders}: send these orders' reminders if still unpaid and not yet reminded. */
  public static final String REMIND_DUE = "remind.due";
  /** A Boolean (repair or not): run the reconciliation now; replies its report as JSON (the response of POST /v1/admin/reconcile). */
  public static final String RECONCILE = "maintenance.reconcile";
  /** {@link PermitRequest}: take permits from a token bucket; replies {@link PermitGrant}. */
  public static final String LIMITER_ACQUIRE = "limiter.acquire";

  private Addresses() {}
}
