package ordertimeout.stats;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import ordertimeout.bus.DueOrders;
import ordertimeout.order.CloseReason;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.SynchronizedHistogram;

import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.LongAdder;

/**
 * Counters of one node since it started, shared by its verticles (all thread-safe): pending timers
 * per shard, closes by reason and path, the lateness distribution of timeout closes, and the events
 * an operator watches (retries, batches given up, sweep catches).
 */
public final class ServiceStats {
  private static final long MAX_TRACKED_LATENESS_MILLIS = 7L * 24 * 3600 * 1000;

  private final AtomicLongArray pendingTimersByShard;
  private final Map<CloseReason, LongAdder> closesByReason = new EnumMap<>(CloseReason.class);
  private final Map<DueOrders.Path, LongAdder> timeoutClosesByPath = new EnumMap<>(DueOrders.Path.class);
  private final Histogram latenessMillis = new SynchronizedHistogram(MAX_TRACKED_LATENESS_MILLIS, 3);
  private final LongAdder closeRetries = new LongAdder();
  private final LongAdder closeBatchesGivenUp = new LongAdder();
  private final LongAdder remindersSent = new LongAdder();
  private final LongAdder ordersCreated = new LongAdder();
  private final LongAdder idempotentReplays = new LongAdder();
  private final LongAdder rateLimited = new LongAdder();
  private volatile boolean wheelLoaded;
  private volatile long lastReloadMillis = -1;

  public ServiceStats(int shards) {
    pendingTimersByShard = new AtomicLongArray(shards);
    for (CloseReason reason : CloseReason.values()) {
      closesByReason.put(reason, new LongAdder());
    }
    for (DueOrders.Path path : DueOrders.Path.values()) {
      timeoutClosesByPath.put(path, new LongAdder());
    }
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

  public void timeoutClosed(DueOrders.Path path, long[] latenessMillisOfEach) {
    closesByReason.get(CloseReason.TIMEOUT).add(latenessMillisOfEach.length);
    timeoutClosesByPath.get(path).add(latenessMillisOfEach.length);
    for (long lateness : latenessMillisOfEach) {
      latenessMillis.recordValue(Math.min(Math.max(lateness, 0), MAX_TRACKED_LATENESS_MILLIS));
    }
  }

  public void closedOnRequest(CloseReason reason) {
    closesByReason.get(reason).increment();
  }

  public void closeRetried() {
    closeRetries.increment();
  }

  public void closeBatchGivenUp() {
    closeBatchesGivenUp.increment();
  }

  public void remindersSent(int count) {
    remindersSent.add(count);
  }

  public void orderCreated() {
    ordersCreated.increment();
  }

  public void idempotentReplay() {
    idempotentReplays.increment();
  }

  public void rateLimited() {
    rateLimited.increment();
  }

  public void wheelLoaded(long reloadMillis) {
    lastReloadMillis = reloadMillis;
    wheelLoaded = true;
  }

  public void wheelUnloaded() {
    wheelLoaded = false;
  }

  public boolean isWheelLoaded() {
    return wheelLoaded;
  }

  public long closeBatchesGivenUp() {
    return closeBatchesGivenUp.sum();
  }

  public long timeoutCloses(DueOrders.Path path) {
    return timeoutClosesByPath.get(path).sum();
  }

  /** The body of GET /v1/admin/stats. */
  public JsonObject toJson() {
    JsonArray byShard = new JsonArray();
    long total = 0;
    for (int shard = 0; shard < pendingTimersByShard.length(); shard++) {
      long pending = pendingTimersByShard.get(shard);
      byShard.add(pending);
      total += pending;
    }
    JsonObject closes = new JsonObject();
    closesByReason.forEach((reason, count) -> closes.put(reason.name(), count.sum()));
    JsonObject byPath = new JsonObject();
    timeoutClosesByPath.forEach((path, count) -> byPath.put(path.name().toLowerCase(), count.sum()));
    Histogram lateness = latenessMillis.copy();
    return new JsonObject()
        .put("pendingTimers", new JsonObject().put("total", total).put("byShard", byShard))
        .put("closesByReason", closes)
        .put("timeoutClosesByPath", byPath)
        .put("latenessMillis", new JsonObject()
            .put("count", lateness.getTotalCount())
            .put("p50", lateness.getValueAtPercentile(50))
            .put("p99", lateness.getValueAtPercentile(99))
            .put("p999", lateness.getValueAtPercentile(99.9))
            .put("max", lateness.getMaxValue()))
        .put("closeRetries", closeRetries.sum())
        .put("closeBatchesGivenUp", closeBatchesGivenUp.sum())
        .put("remindersSent", remindersSent.sum())
        .put("ordersCreated", ordersCreated.sum())
        .put("idempotentReplays", idempotentReplays.sum())
        .put("rateLimited", rateLimited.sum())
        .put("wheelLoaded", wheelLoaded)
        .put("lastReloadMillis", lastReloadMillis);
  }
}
