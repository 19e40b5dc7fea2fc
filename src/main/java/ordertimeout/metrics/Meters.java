package ordertimeout.metrics;

/**
 * The name of every meter the service registers (Vert.x's own pool, event-bus, HTTP client and JVM
 * meters aside). In the Prometheus text the dots become underscores, a timer gets {@code _seconds} and a
 * counter {@code _total}: {@code ordertimeout.close.lateness} is {@code ordertimeout_close_lateness_seconds}.
 */
public final class Meters {
  private Meters() {}

  // ---- orders in
  /** Not "orders.created": Prometheus keeps the suffix _created for itself. */
  public static final String ORDERS_CREATED = "ordertimeout.created.orders";
  public static final String ORDER_CREATE = "ordertimeout.order.create";
  /** A create's or pay's wait at the node's group commit until its group started, by kind (create, pay). */
  public static final String INTAKE_GROUP_WAIT = "ordertimeout.intake.group.wait";
  /** A group commit's transaction, from its start until it ended (its retry after a conflict included), by kind. */
  public static final String INTAKE_GROUP_TRANSACTION = "ordertimeout.intake.group.transaction";
  public static final String IDEMPOTENT_REPLAYS = "ordertimeout.idempotent.replays";
  public static final String RATE_LIMITED = "ordertimeout.rate.limited";
  /**
   * Requests answered 503 without being served, by problem code: overloaded (queue full, deadline), row_locked, or
   * rate_limiter_unavailable (creates refused while Redis is away under redis.whenUnreachable=deny).
   */
  public static final String REQUESTS_SHED = "ordertimeout.requests.shed";
  public static final String STATUS_CACHE_READS = "ordertimeout.status.cache.reads";
  public static final String STATUS_CACHE_ORDERS = "ordertimeout.status.cache.orders";

  // ---- HTTP
  /** A timer by route, method and code (its count: the requests answered), in place of Vert.x's (decision 0040). */
  public static final String HTTP_REQUESTS = "ordertimeout.http.requests";
  public static final String HTTP_CONNECTIONS_OPEN = "ordertimeout.http.connections.open";
  public static final String HTTP_CONNECTIONS_REFUSED = "ordertimeout.http.connections.refused";
  public static final String HTTP_REQUEST_READ_TIMEOUTS = "ordertimeout.http.request.read.timeouts";
  /**
   * Pages asked for with a raw id as cursor, by list (parked, deliveries): the form those lists handed out before
   * their cursors were opaque, still taken. While it stays at 0 on every node, the form can go.
   */
  public static final String HTTP_RAW_CURSORS = "ordertimeout.http.raw.cursors";

  // ---- the timer
  public static final String PENDING_TIMERS = "ordertimeout.pending.timers";
  public static final String WHEEL_LOADED = "ordertimeout.wheel.loaded";
  public static final String WHEEL_RELOAD = "ordertimeout.wheel.reload";
  public static final String WHEEL_CAUGHT_UP = "ordertimeout.wheel.caught.up";
  public static final String SHARDS_OWNED = "ordertimeout.shards.owned";
  public static final String TIMER_PUBLISH_FAILURES = "ordertimeout.timer.publish.failures";

  // ---- closes
  public static final String CLOSES = "ordertimeout.closes";
  public static final String SWEEP_CATCHES = "ordertimeout.sweep.catches";
  public static final String CLOSE_LATENESS = "ordertimeout.close.lateness";
  /** The Prometheus registry drops a timer's percentiles when it has buckets: they are gauges of their own. */
  public static final String CLOSE_LATENESS_PERCENTILE = "ordertimeout.close.lateness.percentile";
  /** closed_at - hold_until of the closes that waited for a started payment (POST .../payment-started), apart from the above. */
  public static final String CLOSE_HELD_LATENESS = "ordertimeout.close.held.lateness";
  public static final String CLOSE_RETRIES = "ordertimeout.close.retries";
  /** Close transactions allowed at once now: close.maxInFlight, less while creates are slow (close.yieldToCreatesAboveMillis). */
  public static final String CLOSE_CONCURRENCY = "ordertimeout.close.concurrency";
  public static final String CLOSE_BATCHES_GIVEN_UP = "ordertimeout.close.batches.given.up";
  /** Orders this node parked after close.parkAfterFailures failed closes. */
  public static final String CLOSE_PARKINGS = "ordertimeout.close.parkings";
  /** Parked unpaid orders in the database (all nodes'), read every metrics.outboxRefreshSeconds. */
  public static final String ORDERS_PARKED = "ordertimeout.orders.parked";
  /** The sweep's passes over its shards: the count is the runs, the sum their duration. What they closed is {@link #SWEEP_CATCHES}. */
  public static final String SWEEP_RUNS = "ordertimeout.sweep.runs";
  /** Overdue orders (kind close) and late reminders (kind remind) the sweep's passes found and handed on. */
  public static final String SWEEP_FOUND = "ordertimeout.sweep.found";
  /** Sweep passes left out because close batches were queued on the node (their pages would only wait behind them). */
  public static final String SWEEP_SKIPPED = "ordertimeout.sweep.skipped";
  /** Close and reminder batches waiting for a place on the node (every close.maxInFlight place taken). */
  public static final String CLOSE_QUEUED = "ordertimeout.close.queued";
  public static final String REMINDERS_SENT = "ordertimeout.reminders.sent";

  // ---- events out
  public static final String OUTBOX_PUBLISHED = "ordertimeout.outbox.published";
  public static final String OUTBOX_RELAY_FAILURES = "ordertimeout.outbox.relay.failures";
  public static final String OUTBOX_BACKLOG = "ordertimeout.outbox.backlog";
  public static final String OUTBOX_OLDEST_AGE = "ordertimeout.outbox.oldest.age";
  public static final String EVENTS_DROPPED_UNDELIVERED = "ordertimeout.events.dropped.undelivered";
  /** Webhook attempts by outcome: delivered, retried (failed, tried again later), failed (given up). */
  public static final String WEBHOOK_ATTEMPTS = "ordertimeout.webhook.attempts";

  // ---- maintenance
  public static final String RECONCILIATION_SKU_DIFFERENCES = "ordertimeout.reconciliation.sku.differences";
  public static final String RECONCILIATION_OVERDUE_UNPAID = "ordertimeout.reconciliation.overdue.unpaid";
  public static final String RECONCILIATION_REPAIRED = "ordertimeout.reconciliation.repaired";
  public static final String RETENTION_DELETED = "ordertimeout.retention.deleted";
  public static final String JOB_RUNS = "ordertimeout.job.runs";
  /** Partitions of orders (with their order_items partitions) the partitions job took out, by {@code archived}. */
  public static final String PARTITIONS_DROPPED = "ordertimeout.partitions.dropped";

  // ---- the node
  public static final String DRAINING = "ordertimeout.draining";
  public static final String ALARM = "ordertimeout.alarm";
  public static final String REDIS_UP = "ordertimeout.redis.up";
  public static final String REDIS_FALLBACKS = "ordertimeout.redis.fallbacks";
}
