package ordertimeout.http;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import ordertimeout.metrics.NodeStats;
import ordertimeout.timer.OwnedShards;
import org.HdrHistogram.Histogram;

import java.util.Arrays;
import java.util.Locale;

/** The body of GET /v1/admin/stats: what the node counted since it started, and what it owns now. */
final class StatsJson {
  private StatsJson() {}

  static JsonObject of(NodeStats.Snapshot stats, OwnedShards owned) {
    JsonArray byShard = new JsonArray();
    Arrays.stream(stats.pendingTimersByShard()).forEach(byShard::add);
    JsonObject closes = new JsonObject();
    stats.closesByReason().forEach((reason, count) -> closes.put(reason.name(), count));
    JsonObject byPath = new JsonObject();
    stats.timeoutClosesByPath().forEach((path, count) -> byPath.put(path.name().toLowerCase(Locale.ROOT), count));
    Histogram lateness = stats.allTimeLatenessMillis();
    return new JsonObject()
        .put("pendingTimers", new JsonObject().put("total", stats.pendingTimers()).put("byShard", byShard))
        .put("closesByReason", closes)
        .put("timeoutClosesByPath", byPath)
        .put("latenessMillis", new JsonObject()
            .put("count", lateness.getTotalCount())
            .put("p50", lateness.getValueAtPercentile(50))
            .put("p99", lateness.getValueAtPercentile(99))
            .put("p999", lateness.getValueAtPercentile(99.9))
            .put("max", lateness.getMaxValue()))
        .put("closeRetries", stats.closeRetries())
        .put("closeBatchesGivenUp", stats.closeBatchesGivenUp())
        .put("remindersSent", stats.remindersSent())
        .put("ordersCreated", stats.ordersCreated())
        .put("idempotentReplays", stats.idempotentReplays())
        .put("rateLimited", stats.rateLimited())
        .put("reconciliation", new JsonObject()
            .put("skuDifferences", stats.reconciliationSkuDifferences())
            .put("overdueUnpaid", stats.reconciliationOverdueUnpaid())
            .put("repaired", stats.reconciliationRepaired()))
        .put("retentionDeleted", new JsonObject(new java.util.LinkedHashMap<>(stats.retentionDeleted())))
        .put("wheelLoaded", owned.allLoaded())
        .put("lastReloadMillis", stats.lastReloadMillis())
        .put("ownedShards", new JsonArray(Arrays.stream(owned.list()).boxed().toList()));
  }
}
