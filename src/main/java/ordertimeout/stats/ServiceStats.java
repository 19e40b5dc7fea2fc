package ordertimeout.stats;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.distribution.ValueAtPercentile;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import ordertimeout.bus.DueOrders;
import ordertimeout.order.CloseReason;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.SynchronizedHistogram;

import java.time.Duration;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * What one node has done since it started, shared by its verticles (all thread-safe), kept as
 * Micrometer meters in the node's registry (served at GET /metrics) and summed up as the JSON of
 * GET /v1/admin/stats. Every meter is named here; {@code ordertimeout.close.lateness} becomes
 * {@code ordertimeout_close_lateness_seconds} in the Prometheus text, a counter gets {@code _total}.
 */
public final class ServiceStats {
  public static final String CLOSES = "ordertimeout.closes";
  public static final String SWEEP_CATCHES = "ordertimeout.sweep.catches";
  public static final String CLOSE_LATENESS = "ordertimeout.close.lateness";
  /** The Prometheus registry drops a timer's percentiles when it has buckets: they are gauges of their own. */
  public static final String CLOSE_LATENESS_PERCENTILE = "ordertimeout.close.lateness.percentile";
  public static final String CLOSE_RETRIES = "ordertimeout.close.retries";
  public static final String CLOSE_BATCHES_GIVEN_UP = "ordertimeout.close.batches.given.up";
  public static final String REMINDERS_SENT = "ordertimeout.reminders.sent";
  /** Not "orders.created": Prometheus keeps the suffix _created for itself. */
  public static final String ORDERS_CREATED = "ordertimeout.created.orders";
  public static final String ORDER_CREATE = "ordertimeout.order.create";
  public static final String IDEMPOTENT_REPLAYS = "ordertimeout.idempotent.replays";
  public static final String RATE_LIMITED = "ordertimeout.rate.limited";
  public static final String PENDING_TIMERS = "ordertimeout.pending.timers";
  public static final String WHEEL_LOADED = "ordertimeout.wheel.loaded";
  public static final String WHEEL_RELOAD = "ordertimeout.wheel.reload";
  public static final String SHARDS_OWNED = "ordertimeout.shards.owned";
  public static final String TIMER_PUBLISH_FAILURES = "ordertimeout.timer.publish.failures";
  public static final String OUTBOX_PUBLISHED = "ordertimeout.outbox.published";
  public static final String OUTBOX_RELAY_FAILURES = "ordertimeout.outbox.relay.failures";
  public static final String RECONCILIATION_SKU_DIFFERENCES = "ordertimeout.reconciliation.sku.differences";
  public static final String RECONCILIATION_OVERDUE_UNPAID = "ordertimeout.reconciliation.overdue.unpaid";
  public static final String RECONCILIATION_REPAIRED = "ordertimeout.reconciliation.repaired";
  public static final String RETENTION_DELETED = "ordertimeout.retention.deleted";

  /** The path tag of closes asked for over the API (cancel, admin close). */
  public static final String REQUEST_PATH = "request";

  private static final long MAX_TRACKED_LATENESS_MILLIS = 7L * 24 * 3600 * 1000;
  private static final double[] PERCENTILES = {0.5, 0.99, 0.999};
  private static final Duration[] LATENESS_BUCKETS = millis(5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 30_000,
      60_000, 300_000, 1_800_000);
  private static final Duration[] CREATE_BUCKETS = millis(1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000);

  private final MeterRegistry registry;
  private final AtomicLongArray pendingTimersByShard;
  private final Map<DueOrders.Path, Counter> timeoutClosesByPath = new EnumMap<>(DueOrders.Path.class);
  private final Map<CloseReason, Counter> requestClosesByReason = new ConcurrentHashMap<>();
  private final Counter sweepCatches;
  private final Timer lateness;
  /** All-time lateness with its exact maximum, for the admin JSON; the timer's percentiles cover the recent window only. */
  private final Histogram latenessMillis = new SynchronizedHistogram(MAX_TRACKED_LATENESS_MILLIS, 3);
  private final Counter closeRetries;
  private final Counter closeBatchesGivenUp;
  private final Counter remindersSent;
  private final Counter ordersCreated;
  private final Counter idempotentReplays;
  private final Counter rateLimited;
  private final Timer wheelReload;
  private final Map<Integer, Timer> createsByStatus = new ConcurrentHashMap<>();
  private volatile BooleanSupplier wheelLoaded = () -> false;
  /** -1 until the first reconciliation ran. */
  private volatile long reconciliationSkuDifferences = -1;
  private volatile long reconciliationOverdueUnpaid = -1;
  private final Counter reconciliationRepaired;
  private final Map<String, Counter> retentionDeleted = new ConcurrentHashMap<>();
  private volatile long lastReloadMillis = -1;
  private volatile Supplier<int[]> ownedShards = () -> new int[0];
  private final Counter timerPublishFailures;
  private final Counter outboxPublished;
  private final Counter outboxRelayFailures;

  /**
   * Registers the node's meters in {@code registry}; the lateness percentiles (p50, p99, p99.9) are
   * over a sliding window of {@code percentileWindow}.
   */
  public ServiceStats(MeterRegistry registry, int shards, Duration percentileWindow) {
    this.registry = registry;
    pendingTimersByShard = new AtomicLongArray(shards);
    for (int shard = 0; shard < shards; shard++) {
      int index = shard;
      Gauge.builder(PENDING_TIMERS, pendingTimersByShard, timers -> timers.get(index))
          .description("Deadlines and reminders waiting in the time wheel, per shard")
          .tag("shard", Integer.toString(shard))
          .strongReference(true)
          .register(registry);
    }
    for (DueOrders.Path path : DueOrders.Path.values()) {
      timeoutClosesByPath.put(path, closes(CloseReason.TIMEOUT, path.name().toLowerCase(Locale.ROOT)));
    }
    requestClose(CloseReason.USER_CANCELLED);
    requestClose(CloseReason.ADMIN);
    sweepCatches = counter(SWEEP_CATCHES, "Overdue orders the sweep closed because the wheel had not (they are closed late)");
    lateness = Timer.builder(CLOSE_LATENESS)
        .description("closed_at - close_at of the timeout closes, both from the database clock")
        .serviceLevelObjectives(LATENESS_BUCKETS)
        .publishPercentiles(PERCENTILES)
        .percentilePrecision(2)
        .distributionStatisticExpiry(percentileWindow)
        .distributionStatisticBufferLength(3)
        .register(registry);
    for (double percentile : PERCENTILES) {
      Gauge.builder(CLOSE_LATENESS_PERCENTILE, lateness, timer -> percentile(timer, percentile, TimeUnit.SECONDS))
          .description("Lateness of the timeout closes at this quantile, over the recent window (metrics.windowSeconds)")
          .tag("quantile", Double.toString(percentile))
          .baseUnit("seconds")
          .strongReference(true)
          .register(registry);
    }
    closeRetries = counter(CLOSE_RETRIES, "Close or reminder batches attempted again after a failure");
    closeBatchesGivenUp = counter(CLOSE_BATCHES_GIVEN_UP, "Batches given up after their retries (closes are left to the sweep)");
    remindersSent = counter(REMINDERS_SENT, "ORDER_CLOSE_REMINDER events written");
    ordersCreated = counter(ORDERS_CREATED, "Orders created (not counting idempotent replays)");
    idempotentReplays = counter(IDEMPOTENT_REPLAYS, "Creates answered with the stored response of an earlier request with the same key");
    rateLimited = counter(RATE_LIMITED, "Creates refused by the per-client token bucket (429 rate_limited)");
    wheelReload = Timer.builder(WHEEL_RELOAD)
        .description("Time to reload every pending deadline of the owned shards into the wheel")
        .register(registry);
    Gauge.builder(SHARDS_OWNED, this, stats -> stats.ownedShards.get().length)
        .description("Shards whose timers this node keeps (all of them on a node alone; its partitions of the timer topic in a cluster)")
        .strongReference(true)
        .register(registry);
    timerPublishFailures = counter(TIMER_PUBLISH_FAILURES,
        "Timer messages Kafka did not take; their orders are closed by the sweep or the next reload");
    outboxPublished = counter(OUTBOX_PUBLISHED, "Outbox events the broker acknowledged");
    outboxRelayFailures = counter(OUTBOX_RELAY_FAILURES, "Outbox relay transactions rolled back (broker or database unreachable); retried");
    Gauge.builder(WHEEL_LOADED, this, stats -> stats.isWheelLoaded() ? 1 : 0)
        .description("1 when the wheel holds every owned shard's pending deadlines")
        .strongReference(true)
        .register(registry);
    Gauge.builder(RECONCILIATION_SKU_DIFFERENCES, this, stats -> stats.reconciliationSkuDifferences)
        .description("SKUs whose reserved differed from the sum of their unpaid items at the last reconciliation (-1: none ran yet)")
        .strongReference(true)
        .register(registry);
    Gauge.builder(RECONCILIATION_OVERDUE_UNPAID, this, stats -> stats.reconciliationOverdueUnpaid)
        .description("Unpaid orders overdue by more than the sweep's grace and interval at the last reconciliation (-1: none ran yet)")
        .strongReference(true)
        .register(registry);
    reconciliationRepaired = counter(RECONCILIATION_REPAIRED, "SKUs whose reserved count a reconciliation with repair set right");
  }

  private Counter closes(CloseReason reason, String path) {
    return Counter.builder(CLOSES)
        .description("Orders closed, by reason and by the path that closed them (wheel, sweep, request)")
        .tag("reason", reason.name())
        .tag("path", path)
        .register(registry);
  }

  private Counter requestClose(CloseReason reason) {
    return requestClosesByReason.computeIfAbsent(reason, r -> closes(r, REQUEST_PATH));
  }

  private Counter counter(String name, String description) {
    return Counter.builder(name).description(description).register(registry);
  }

  private static Duration[] millis(long... values) {
    Duration[] durations = new Duration[values.length];
    for (int i = 0; i < values.length; i++) {
      durations[i] = Duration.ofMillis(values[i]);
    }
    return durations;
  }

  public MeterRegistry registry() {
    return registry;
  }

  public void timersAdded(int shard, int count) {
    pendingTimersByShard.addAndGet(shard, count);
  }

  public void timersRemoved(int shard, int count) {
    pendingTimersByShard.addAndGet(shard, -count);
  }

  public void timersCleared() {
    for (int shard = 0; shard < pendingTimersByShard.length(); shard++) {
      pendingTimersByShard.set(shard, 0);
    }
  }

  /** Where the stats read the shards this node owns. */
  public void trackOwnedShards(Supplier<int[]> shardsOwned) {
    ownedShards = shardsOwned;
  }

  public void timerPublishFailed(int messages) {
    timerPublishFailures.increment(messages);
  }

  public void outboxPublished(int events) {
    outboxPublished.increment(events);
  }

  public void outboxRelayFailed() {
    outboxRelayFailures.increment();
  }

  public void timersClearedFor(int[] shards) {
    for (int shard : shards) {
      pendingTimersByShard.set(shard, 0);
    }
  }

  public void timeoutClosed(DueOrders.Path path, long[] latenessMillisOfEach) {
    timeoutClosesByPath.get(path).increment(latenessMillisOfEach.length);
    if (path == DueOrders.Path.SWEEP) {
      sweepCatches.increment(latenessMillisOfEach.length);
    }
    for (long late : latenessMillisOfEach) {
      long clamped = Math.min(Math.max(late, 0), MAX_TRACKED_LATENESS_MILLIS);
      latenessMillis.recordValue(clamped);
      lateness.record(clamped, TimeUnit.MILLISECONDS);
    }
  }

  public void closedOnRequest(CloseReason reason) {
    requestClose(reason).increment();
  }

  public void closeRetried() {
    closeRetries.increment();
  }

  public void closeBatchGivenUp() {
    closeBatchesGivenUp.increment();
  }

  public void remindersSent(int count) {
    remindersSent.increment(count);
  }

  public void orderCreated() {
    ordersCreated.increment();
  }

  /** A POST /v1/orders answered with {@code status} after {@code nanos}, whatever its outcome. */
  public void createAnswered(int status, long nanos) {
    createsByStatus.computeIfAbsent(status, code -> Timer.builder(ORDER_CREATE)
            .description("Latency of POST /v1/orders from the request to its answer, by HTTP status")
            .tag("status", Integer.toString(code))
            .serviceLevelObjectives(CREATE_BUCKETS)
            .register(registry))
        .record(nanos, TimeUnit.NANOSECONDS);
  }

  public void idempotentReplay() {
    idempotentReplays.increment();
  }

  public void rateLimited() {
    rateLimited.increment();
  }

  /** Where readiness reads whether the wheel holds every owned shard's pending deadlines. */
  public void trackWheelLoaded(BooleanSupplier everyOwnedShardLoaded) {
    wheelLoaded = everyOwnedShardLoaded;
  }

  public void shardsReloaded(long reloadMillis) {
    wheelReload.record(reloadMillis, TimeUnit.MILLISECONDS);
    lastReloadMillis = reloadMillis;
  }

  public boolean isWheelLoaded() {
    return wheelLoaded.getAsBoolean();
  }

  /** A reconciliation ran: what it found (before any repair) and how many SKUs it repaired. */
  public void reconciled(long skuDifferences, long overdueUnpaid, int repaired) {
    reconciliationSkuDifferences = skuDifferences;
    reconciliationOverdueUnpaid = overdueUnpaid;
    reconciliationRepaired.increment(repaired);
  }

  /** Retention deleted {@code rows} of {@code table}. */
  public void retentionDeleted(String table, int rows) {
    retentionDeleted.computeIfAbsent(table, name -> Counter.builder(RETENTION_DELETED)
            .description("Rows the retention job deleted, by table")
            .tag("table", name)
            .register(registry))
        .increment(rows);
  }

  /** SKUs found off at the last reconciliation, -1 before the first. */
  public long lastReconciliationSkuDifferences() {
    return reconciliationSkuDifferences;
  }

  public long closeBatchesGivenUp() {
    return (long) closeBatchesGivenUp.count();
  }

  public long sweepCatches() {
    return (long) sweepCatches.count();
  }

  public long timeoutCloses(DueOrders.Path path) {
    return (long) timeoutClosesByPath.get(path).count();
  }

  /** The p99 lateness of the timeout closes within the recent window, in milliseconds (0 when none closed). */
  public double recentLatenessP99Millis() {
    return percentile(lateness, 0.99, TimeUnit.MILLISECONDS);
  }

  private static double percentile(Timer timer, double percentile, TimeUnit unit) {
    for (ValueAtPercentile value : timer.takeSnapshot().percentileValues()) {
      if (value.percentile() == percentile) {
        return value.value(unit);
      }
    }
    return 0;
  }

  private JsonObject retentionDeletedJson() {
    JsonObject deleted = new JsonObject();
    retentionDeleted.forEach((table, count) -> deleted.put(table, (long) count.count()));
    return deleted;
  }

  /** The body of GET /v1/admin/stats: counts since the node started. */
  public JsonObject toJson() {
    JsonArray byShard = new JsonArray();
    long total = 0;
    for (int shard = 0; shard < pendingTimersByShard.length(); shard++) {
      long pending = pendingTimersByShard.get(shard);
      byShard.add(pending);
      total += pending;
    }
    JsonObject closes = new JsonObject();
    for (CloseReason reason : CloseReason.values()) {
      Counter onRequest = requestClosesByReason.get(reason);
      long count = onRequest == null ? 0 : (long) onRequest.count();
      if (reason == CloseReason.TIMEOUT) {
        count += timeoutClosesByPath.values().stream().mapToLong(counter -> (long) counter.count()).sum();
      }
      closes.put(reason.name(), count);
    }
    JsonObject byPath = new JsonObject();
    timeoutClosesByPath.forEach((path, count) -> byPath.put(path.name().toLowerCase(Locale.ROOT), (long) count.count()));
    Histogram allTime = latenessMillis.copy();
    return new JsonObject()
        .put("pendingTimers", new JsonObject().put("total", total).put("byShard", byShard))
        .put("closesByReason", closes)
        .put("timeoutClosesByPath", byPath)
        .put("latenessMillis", new JsonObject()
            .put("count", allTime.getTotalCount())
            .put("p50", allTime.getValueAtPercentile(50))
            .put("p99", allTime.getValueAtPercentile(99))
            .put("p999", allTime.getValueAtPercentile(99.9))
            .put("max", allTime.getMaxValue()))
        .put("closeRetries", (long) closeRetries.count())
        .put("closeBatchesGivenUp", (long) closeBatchesGivenUp.count())
        .put("remindersSent", (long) remindersSent.count())
        .put("ordersCreated", (long) ordersCreated.count())
        .put("idempotentReplays", (long) idempotentReplays.count())
        .put("rateLimited", (long) rateLimited.count())
        .put("reconciliation", new JsonObject()
            .put("skuDifferences", reconciliationSkuDifferences)
            .put("overdueUnpaid", reconciliationOverdueUnpaid)
            .put("repaired", (long) reconciliationRepaired.count()))
        .put("retentionDeleted", retentionDeletedJson())
        .put("wheelLoaded", isWheelLoaded())
        .put("lastReloadMillis", lastReloadMillis)
        .put("ownedShards", new JsonArray(Arrays.stream(ownedShards.get()).boxed().toList()));
  }
}
