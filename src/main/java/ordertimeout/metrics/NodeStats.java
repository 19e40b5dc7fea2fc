package ordertimeout.metrics;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.distribution.ValueAtPercentile;
import ordertimeout.bus.DueOrders;
import ordertimeout.order.CloseReason;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.SynchronizedHistogram;

import java.time.Duration;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.LongAdder;

/**
 * What one node has done since it started, shared by its verticles (all thread-safe), kept as
 * Micrometer meters in the node's registry (served at GET /metrics) and summed up as the JSON of
 * GET /v1/admin/stats. Their names are in {@link Meters}.
 */
public final class NodeStats {
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
  /** Lateness of the closes that waited for a started payment, after its hold: kept out of the headline lateness. */
  private final Timer heldLateness;
  /** All-time lateness with its exact maximum, for the admin JSON; the timer's percentiles cover the recent window only. */
  private final Histogram latenessMillis = new SynchronizedHistogram(MAX_TRACKED_LATENESS_MILLIS, 3);
  private final Counter closeRetries;
  private final Counter closeBatchesGivenUp;
  private final Counter parkings;
  private final Timer sweepRuns;
  private final Counter sweepFoundCloses;
  private final Counter sweepFoundReminders;
  private final Counter remindersSent;
  private final Counter ordersCreated;
  private final Counter idempotentReplays;
  private final Counter rateLimited;
  private final Timer wheelReload;
  private final Counter wheelCaughtUp;
  private final Map<Integer, Timer> createsByStatus = new ConcurrentHashMap<>();
  /** -1 until the first reconciliation ran. */
  private volatile long reconciliationSkuDifferences = -1;
  private volatile long reconciliationOverdueUnpaid = -1;
  private final Counter reconciliationRepaired;
  private final Map<String, Counter> retentionDeleted = new ConcurrentHashMap<>();
  private final Map<String, Counter> requestsShed = new ConcurrentHashMap<>();
  private final Map<String, Counter> rawCursors = new ConcurrentHashMap<>();
  private volatile long lastReloadMillis = -1;
  private final Counter timerPublishFailures;
  private final Counter outboxPublished;
  private final Counter outboxRelayFailures;
  private final Counter eventsDroppedUndelivered;
  private final Map<String, Counter> webhookAttempts = new ConcurrentHashMap<>();
  private final LongAdder recentCreates = new LongAdder();
  private final LongAdder recentSlowCreates = new LongAdder();
  private volatile long slowCreateNanos = Long.MAX_VALUE;
  private final AtomicInteger closeConcurrency = new AtomicInteger();
  private final AtomicInteger closeQueued = new AtomicInteger();
  /** When the oldest batch waiting for a close place was queued (node clock), 0 while none waits. */
  private final AtomicLong oldestCloseQueuedAtMillis = new AtomicLong();
  private final Counter sweepSkipped;

  /** The creates answered since the last {@link #takeRecentCreates()}, and how many of them were slow. */
  public record RecentCreates(long answered, long slow) {}

  /**
   * Registers the node's meters in {@code registry}; the lateness percentiles (p50, p99, p99.9) are
   * over a sliding window of {@code percentileWindow}.
   */
  public NodeStats(MeterRegistry registry, int shards, Duration percentileWindow) {
    this.registry = registry;
    pendingTimersByShard = new AtomicLongArray(shards);
    for (int shard = 0; shard < shards; shard++) {
      int index = shard;
      Gauge.builder(Meters.PENDING_TIMERS, pendingTimersByShard, timers -> timers.get(index))
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
    sweepCatches = counter(Meters.SWEEP_CATCHES, "Overdue orders the sweep closed because the wheel had not (they are closed late)");
    lateness = Timer.builder(Meters.CLOSE_LATENESS)
        .description("closed_at - close_at of the timeout closes, both from the database clock")
        .serviceLevelObjectives(LATENESS_BUCKETS)
        .publishPercentiles(PERCENTILES)
        .percentilePrecision(2)
        .distributionStatisticExpiry(percentileWindow)
        .distributionStatisticBufferLength(3)
        .register(registry);
    heldLateness = Timer.builder(Meters.CLOSE_HELD_LATENESS)
        .description("closed_at - hold_until of the timeout closes that waited for a started payment past their deadline")
        .serviceLevelObjectives(LATENESS_BUCKETS)
        .register(registry);
    for (double percentile : PERCENTILES) {
      Gauge.builder(Meters.CLOSE_LATENESS_PERCENTILE, lateness, timer -> percentile(timer, percentile, TimeUnit.SECONDS))
          .description("Lateness of the timeout closes at this quantile, over the recent window (metrics.windowSeconds)")
          .tag("quantile", Double.toString(percentile))
          .baseUnit("seconds")
          .strongReference(true)
          .register(registry);
    }
    closeRetries = counter(Meters.CLOSE_RETRIES, "Close or reminder batches attempted again after a failure");
    closeBatchesGivenUp = counter(Meters.CLOSE_BATCHES_GIVEN_UP, "Batches given up after their retries (closes are left to the sweep)");
    parkings = counter(Meters.CLOSE_PARKINGS, "Orders this node parked after close.parkAfterFailures failed closes (they wait for an admin's retry)");
    sweepRuns = Timer.builder(Meters.SWEEP_RUNS)
        .description("The sweep's passes over the owned shards (count) and how long they took (sum); what they closed is "
            + Meters.SWEEP_CATCHES)
        .register(registry);
    sweepFoundCloses = sweepFound("close");
    sweepFoundReminders = sweepFound("remind");
    remindersSent = counter(Meters.REMINDERS_SENT, "ORDER_CLOSE_REMINDER events written");
    ordersCreated = counter(Meters.ORDERS_CREATED, "Orders created (not counting idempotent replays)");
    idempotentReplays = counter(Meters.IDEMPOTENT_REPLAYS, "Creates answered with the stored response of an earlier request with the same key");
    rateLimited = counter(Meters.RATE_LIMITED, "Creates refused by the per-client token bucket (429 rate_limited)");
    wheelReload = Timer.builder(Meters.WHEEL_RELOAD)
        .description("Time to reload every pending deadline of the owned shards into the wheel")
        .register(registry);
    wheelCaughtUp = counter(Meters.WHEEL_CAUGHT_UP,
        "Recent unpaid orders of the kept shards whose timers were read again after a rebalance (a node that left may not have sent them)");
    timerPublishFailures = counter(Meters.TIMER_PUBLISH_FAILURES,
        "Timer messages Kafka did not take; their orders are closed by the sweep or the next reload");
    outboxPublished = counter(Meters.OUTBOX_PUBLISHED, "Outbox events the broker acknowledged");
    outboxRelayFailures = counter(Meters.OUTBOX_RELAY_FAILURES, "Outbox relay transactions rolled back (broker or database unreachable); retried");
    Gauge.builder(Meters.RECONCILIATION_SKU_DIFFERENCES, this, stats -> stats.reconciliationSkuDifferences)
        .description("SKUs whose reserved differed from the sum of their unpaid items at the last reconciliation (-1: none ran yet)")
        .strongReference(true)
        .register(registry);
    Gauge.builder(Meters.RECONCILIATION_OVERDUE_UNPAID, this, stats -> stats.reconciliationOverdueUnpaid)
        .description("Unpaid orders overdue by more than the sweep's grace and interval at the last reconciliation (-1: none ran yet)")
        .strongReference(true)
        .register(registry);
    eventsDroppedUndelivered = counter(Meters.EVENTS_DROPPED_UNDELIVERED,
        "Events retention deleted at retention.eventsMaxDays before every sink that wanted them had them");
    for (String outcome : new String[] {"delivered", "retried", "failed"}) {
      webhookAttempt(outcome, 0);
    }
    Gauge.builder(Meters.CLOSE_CONCURRENCY, closeConcurrency, AtomicInteger::get)
        .description("Close transactions allowed at once now: close.maxInFlight, fewer while creates are slow")
        .strongReference(true)
        .register(registry);
    Gauge.builder(Meters.CLOSE_QUEUED, closeQueued, AtomicInteger::get)
        .description("Close and reminder batches waiting for a place on this node (every close.maxInFlight place taken)")
        .strongReference(true)
        .register(registry);
    sweepSkipped = counter(Meters.SWEEP_SKIPPED,
        "Sweep passes left out because close batches were queued (their pages would only wait behind them)");
    reconciliationRepaired = counter(Meters.RECONCILIATION_REPAIRED, "SKUs whose reserved count a reconciliation with repair set right");
  }

  private Counter sweepFound(String kind) {
    return Counter.builder(Meters.SWEEP_FOUND)
        .description("Unpaid orders the sweep found overdue (kind close) or with their reminder late (kind remind), parked ones aside")
        .tag("kind", kind)
        .register(registry);
  }

  private Counter closes(CloseReason reason, String path) {
    return Counter.builder(Meters.CLOSES)
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

  /**
   * Timeout closes: {@code latenessMillisOfEach} past their deadline, {@code heldLatenessMillisOfEach} (closes that
   * waited for a started payment) past their hold, recorded apart so that a hold does not count as lateness.
   */
  public void timeoutClosed(DueOrders.Path path, long[] latenessMillisOfEach, long[] heldLatenessMillisOfEach) {
    int closed = latenessMillisOfEach.length + heldLatenessMillisOfEach.length;
    timeoutClosesByPath.get(path).increment(closed);
    if (path == DueOrders.Path.SWEEP) {
      sweepCatches.increment(closed);
    }
    for (long late : latenessMillisOfEach) {
      long clamped = Math.min(Math.max(late, 0), MAX_TRACKED_LATENESS_MILLIS);
      latenessMillis.recordValue(clamped);
      lateness.record(clamped, TimeUnit.MILLISECONDS);
    }
    for (long late : heldLatenessMillisOfEach) {
      heldLateness.record(Math.min(Math.max(late, 0), MAX_TRACKED_LATENESS_MILLIS), TimeUnit.MILLISECONDS);
    }
  }

  public void closedOnRequest(CloseReason reason) {
    requestClose(reason).increment();
  }

  /** {@code count} orders closed on request at once (a bulk close's batch). */
  public void closedOnRequest(CloseReason reason, long count) {
    requestClose(reason).increment(count);
  }

  public void closeRetried() {
    closeRetries.increment();
  }

  public void closeBatchGivenUp() {
    closeBatchesGivenUp.increment();
  }

  public void orderParked() {
    parkings.increment();
  }

  public long parkings() {
    return (long) parkings.count();
  }

  /** One pass of the sweep: how long it took, and the overdue closes and late reminders it found. */
  public void swept(long nanos, long closesFound, long remindersFound) {
    sweepRuns.record(nanos, TimeUnit.NANOSECONDS);
    sweepFoundCloses.increment(closesFound);
    sweepFoundReminders.increment(remindersFound);
  }

  public void sweepSkipped() {
    sweepSkipped.increment();
  }

  /** {@code oldestQueuedAtMillis}: when the oldest of them was queued (node clock); ignored when none waits. */
  public void closeQueued(int batches, long oldestQueuedAtMillis) {
    oldestCloseQueuedAtMillis.set(batches == 0 ? 0 : oldestQueuedAtMillis);
    closeQueued.set(batches);
  }

  /** How long the oldest batch waiting for a close place has waited by {@code nowMillis} (node clock); 0 if none waits. */
  public long closeQueuedForMillis(long nowMillis) {
    long queuedAt = oldestCloseQueuedAtMillis.get();
    return queuedAt == 0 ? 0 : Math.max(0, nowMillis - queuedAt);
  }

  /** Close and reminder batches waiting for a place now. */
  public int closeQueued() {
    return closeQueued.get();
  }

  public void remindersSent(int count) {
    remindersSent.increment(count);
  }

  public void orderCreated() {
    ordersCreated.increment();
  }

  /** A POST /v1/orders answered with {@code status} after {@code nanos}, whatever its outcome. */
  public void createAnswered(int status, long nanos) {
    createsByStatus.computeIfAbsent(status, code -> Timer.builder(Meters.ORDER_CREATE)
            .description("Latency of POST /v1/orders from the request to its answer, by HTTP status")
            .tag("status", Integer.toString(code))
            .serviceLevelObjectives(CREATE_BUCKETS)
            .register(registry))
        .record(nanos, TimeUnit.NANOSECONDS);
    recentCreates.increment();
    if (nanos > slowCreateNanos) {
      recentSlowCreates.increment();
    }
  }

  /** The timers of one of the node's group commits: each request's wait for its group, each group's transaction. */
  public record GroupTimers(Timer waitForGroup, Timer transaction) {}

  /** {@code kind}: create or pay. The same timers every call. */
  public GroupTimers groupTimers(String kind) {
    return new GroupTimers(
        Timer.builder(Meters.INTAKE_GROUP_WAIT)
            .description("Wait of a create or pay at the node's group commit until its group started, by kind")
            .tag("kind", kind).serviceLevelObjectives(CREATE_BUCKETS).register(registry),
        Timer.builder(Meters.INTAKE_GROUP_TRANSACTION)
            .description("Transaction of a create or pay group, from its start until it ended, by kind")
            .tag("kind", kind).serviceLevelObjectives(CREATE_BUCKETS).register(registry));
  }

  /** From now on, {@link #takeRecentCreates()} counts as slow the creates answered after more than {@code bound}. */
  public void countCreatesSlowerThan(Duration bound) {
    slowCreateNanos = bound.toNanos();
  }

  /** The creates answered since the last call, and the slow ones among them; the counts start again from zero. */
  public RecentCreates takeRecentCreates() {
    return new RecentCreates(recentCreates.sumThenReset(), recentSlowCreates.sumThenReset());
  }

  public void closeConcurrency(int allowed) {
    closeConcurrency.set(allowed);
  }

  public void idempotentReplay() {
    idempotentReplays.increment();
  }

  public void rateLimited() {
    rateLimited.increment();
  }

  public void shardsReloaded(long reloadMillis) {
    wheelReload.record(reloadMillis, TimeUnit.MILLISECONDS);
    lastReloadMillis = reloadMillis;
  }

  /** After a rebalance: the timers of {@code orders} recent orders of the shards this node kept were read again. */
  public void timersCaughtUp(int orders) {
    wheelCaughtUp.increment(orders);
  }

  /** A reconciliation ran: what it found (before any repair) and how many SKUs it repaired. */
  public void reconciled(long skuDifferences, long overdueUnpaid, int repaired) {
    reconciliationSkuDifferences = skuDifferences;
    reconciliationOverdueUnpaid = overdueUnpaid;
    reconciliationRepaired.increment(repaired);
  }

  /** A request answered 503 {@code code} without being served. */
  public void requestShed(String code) {
    requestsShed.computeIfAbsent(code, name -> Counter.builder(Meters.REQUESTS_SHED)
            .description("Requests answered 503 without being served, by problem code (overloaded, row_locked, "
                + "rate_limiter_unavailable)")
            .tag("code", name)
            .register(registry))
        .increment();
  }

  /** A page of {@code list} asked for with a raw id as its cursor (the form of before opaque cursors). */
  public void rawCursorTaken(String list) {
    rawCursors.computeIfAbsent(list, name -> Counter.builder(Meters.HTTP_RAW_CURSORS)
            .description("Pages asked for with a raw id as cursor, the form of before opaque cursors, by list")
            .tag("list", name)
            .register(registry))
        .increment();
  }

  public double requestsShed(String code) {
    Counter shed = requestsShed.get(code);
    return shed == null ? 0 : shed.count();
  }

  public void eventsDroppedUndelivered(int events) {
    eventsDroppedUndelivered.increment(events);
  }

  public long eventsDroppedUndelivered() {
    return (long) eventsDroppedUndelivered.count();
  }

  /** {@code outcome}: delivered, retried (failed, tried again later) or failed (given up). */
  public void webhookAttempt(String outcome, int attempts) {
    webhookAttempts.computeIfAbsent(outcome, name -> Counter.builder(Meters.WEBHOOK_ATTEMPTS)
            .description("Webhook attempts by outcome: delivered, retried (failed, tried again later), failed (given up)")
            .tag("outcome", name)
            .register(registry))
        .increment(attempts);
  }

  /** Retention deleted {@code rows} of {@code table}. */
  public void retentionDeleted(String table, int rows) {
    retentionDeleted.computeIfAbsent(table, name -> Counter.builder(Meters.RETENTION_DELETED)
            .description("Rows the retention job deleted, by table")
            .tag("table", name)
            .register(registry))
        .increment(rows);
  }

  /** {@code partitions} partitions of orders taken out, dropped or ({@code archived}) moved to orders_archive. */
  public void partitionsDropped(boolean archived, int partitions) {
    Counter.builder(Meters.PARTITIONS_DROPPED)
        .description("Partitions of finished orders (and their items) the partitions job took out of orders, by archived")
        .tag("archived", Boolean.toString(archived))
        .register(registry)
        .increment(partitions);
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

  /** What the node has counted since it started (GET /v1/admin/stats shows it). */
  public record Snapshot(long[] pendingTimersByShard, Map<CloseReason, Long> closesByReason, Map<DueOrders.Path, Long> timeoutClosesByPath,
                         Histogram allTimeLatenessMillis, long closeRetries, long closeBatchesGivenUp, long remindersSent,
                         long ordersCreated, long idempotentReplays, long rateLimited, long reconciliationSkuDifferences,
                         long reconciliationOverdueUnpaid, long reconciliationRepaired, Map<String, Long> retentionDeleted,
                         long lastReloadMillis) {
    public long pendingTimers() {
      return Arrays.stream(pendingTimersByShard).sum();
    }
  }

  public Snapshot snapshot() {
    long[] pending = new long[pendingTimersByShard.length()];
    for (int shard = 0; shard < pending.length; shard++) {
      pending[shard] = pendingTimersByShard.get(shard);
    }
    Map<CloseReason, Long> closes = new EnumMap<>(CloseReason.class);
    for (CloseReason reason : CloseReason.values()) {
      Counter onRequest = requestClosesByReason.get(reason);
      long count = onRequest == null ? 0 : (long) onRequest.count();
      if (reason == CloseReason.TIMEOUT) {
        count += timeoutClosesByPath.values().stream().mapToLong(counter -> (long) counter.count()).sum();
      }
      closes.put(reason, count);
    }
    Map<DueOrders.Path, Long> byPath = new EnumMap<>(DueOrders.Path.class);
    timeoutClosesByPath.forEach((path, count) -> byPath.put(path, (long) count.count()));
    Map<String, Long> deleted = new TreeMap<>();
    retentionDeleted.forEach((table, count) -> deleted.put(table, (long) count.count()));
    return new Snapshot(pending, closes, byPath, latenessMillis.copy(), (long) closeRetries.count(),
        (long) closeBatchesGivenUp.count(), (long) remindersSent.count(), (long) ordersCreated.count(),
        (long) idempotentReplays.count(), (long) rateLimited.count(), reconciliationSkuDifferences,
        reconciliationOverdueUnpaid, (long) reconciliationRepaired.count(), deleted, lastReloadMillis);
  }
}
