package ordertimeout.bus;

/** Every event-bus address of the service. */
public final class Addresses {
  /**
   * {@link ordertimeout.bus.Deadlines}: put deadlines and reminders into the wheel of their shard's owner.
   * One node alone: its timer takes them. In a cluster: the timer fan-out publishes them to Kafka.
   */
  public static final String TIMER_SCHEDULE = "timer.schedule";
  /**
   * {@link ordertimeout.bus.Deadlines}: move orders' timers (a deadline extended, a close held for a started payment):
   * each kind given replaces the order's timer of that kind, on its shard's owner. One node alone: its timer takes
   * them. In a cluster: the timer fan-out publishes them to Kafka, whose copies always replace.
   */
  public static final String TIMER_MOVE = "timer.move";
  /** {@link CancelTimers}: drop an order's timers (it was paid or closed), on its shard's owner. */
  public static final String TIMER_CANCEL = "timer.cancel";
  /** {@link ordertimeout.bus.Deadlines} of shards this node owns, as they arrive from Kafka: into this node's wheel. */
  public static final String TIMER_OWNED_SCHEDULE = "timer.owned.schedule";
  /**
   * {@link ordertimeout.bus.Deadlines} this node keeps in its wheel whatever their shards: those handed out before the
   * group first assigned it shards (it cannot tell whose a shard is yet; decision 0051).
   */
  public static final String TIMER_KEPT_SCHEDULE = "timer.kept.schedule";
  /** {@link CancelTimers} of shards this node owns, as they arrive from Kafka (or of timers it kept). */
  public static final String TIMER_OWNED_CANCEL = "timer.owned.cancel";
  /** {@link ShardChange}: this node was given these shards; the timer loads them and replies when they are in its wheel. */
  public static final String SHARDS_ASSIGNED = "timer.shards.assigned";
  /**
   * {@link Revocation}: this node lost these shards; the timer drops their timers and replies with them as
   * {@link Deadlines} when the shards were {@linkplain Revocation#lost() lost}, {@link Deadlines#EMPTY} otherwise.
   */
  public static final String SHARDS_REVOKED = "timer.shards.revoked";
  /**
   * {@link Revocation}: this node lost these shards; the timer fan-out sends to Kafka the timers of theirs it lately
   * gave only to this node's wheel, for a new owner that loaded the shard before this node heard of the loss, after
   * the timers the wheel held for them when they were lost.
   */
  public static final String SHARDS_HANDED_OVER = "timer.shards.handed-over";
  /** {@link DueOrders}: close these orders if still unpaid and due; replies with the number closed. */
  public static final String CLOSE_DUE = "close.due";
  /** {@link DueOrders}: send these orders' reminders if still unpaid and not yet reminded. */
  public static final String REMIND_DUE = "remind.due";
  /** A Boolean (repair or not): run the reconciliation now; replies its report as JSON (the response of POST /v1/admin/reconcile). */
  public static final String RECONCILE = "maintenance.reconcile";
  /** {@link PermitRequest}: take permits from a token bucket; replies {@link PermitGrant}. */
  public static final String LIMITER_ACQUIRE = "limiter.acquire";
  /** {@link PermitRequest}: give back permits taken but not used; no reply. */
  public static final String LIMITER_REFUND = "limiter.refund";

  /** Nothing (null): a bulk job was submitted on this node; its bulk-job verticle looks for one now instead of at its next poll. */
  public static final String BULK_JOBS_WAKE = "maintenance.bulk-jobs.wake";

  private Addresses() {}
}
