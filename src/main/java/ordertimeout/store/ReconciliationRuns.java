package ordertimeout.store;

import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;

import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;

/**
 * The reconciliation runs and their reports (table reconciliation_runs): a scheduled run claims its slot first, so
 * that each slot runs once across restarts and nodes; a run on request has no slot. The latest finished report is
 * what GET /v1/admin/reconciliation/latest answers.
 */
public final class ReconciliationRuns {
  private final Pool pool;

  public ReconciliationRuns(Pool pool) {
    this.pool = pool;
  }

  /** The scheduled run of {@code slot}: still {@code running} on some node, or finished. */
  public record SlotRun(Instant slot, boolean running) {}

  /**
   * The run of the latest slot that counts as run, null when none: one that finished, or one still running that started
   * at most {@code staleSeconds} ago. A run that never finished and started longer ago (its node died) does not count,
   * so that its slot is claimed again ({@link #claim} takes it over).
   */
  public Future<SlotRun> lastRun(int staleSeconds) {
    return pool.preparedQuery(Sql.LAST_RECONCILIATION_SLOT).execute(Tuple.of(staleSeconds)).map(rows -> {
      if (rows.size() == 0) {
        return null;
      }
      Row row = rows.iterator().next();
      return new SlotRun(row.getOffsetDateTime("slot").toInstant(), row.getBoolean("running"));
    });
  }

  /**
   * The run's id if node {@code nodeId} got {@code slot}, null when another node has it (running, or done). A run that
   * never finished and started more than {@code staleSeconds} ago is taken over.
   */
  public Future<Long> claim(Instant slot, int nodeId, int staleSeconds) {
    return pool.preparedQuery(Sql.CLAIM_RECONCILIATION_SLOT)
        .execute(Tuple.of(slot.atOffset(ZoneOffset.UTC), nodeId, staleSeconds))
        .map(rows -> rows.size() == 0 ? null : rows.iterator().next().getLong("id"));
  }

  public Future<Long> startRequested(int nodeId, boolean repair) {
    return pool.preparedQuery(Sql.START_REQUESTED_RECONCILIATION).execute(Tuple.of(nodeId, repair))
        .map(rows -> rows.iterator().next().getLong("id"));
  }

  public Future<Void> finished(long id, JsonObject report) {
    return pool.preparedQuery(Sql.FINISH_RECONCILIATION).execute(Tuple.of(id, report.encode(), null)).mapEmpty();
  }

  public Future<Void> failed(long id, String error) {
    return pool.preparedQuery(Sql.FINISH_RECONCILIATION).execute(Tuple.of(id, null, error)).mapEmpty();
  }

  /**
   * The latest run that finished with a report, as GET /v1/admin/reconciliation/latest answers it: the run (its
   * trigger, slot, node, whether it repaired, start and finish) and its report; null before any.
   */
  public Future<JsonObject> latest() {
    return pool.query(Sql.LATEST_RECONCILIATION).execute().map(rows -> {
      if (rows.size() == 0) {
        return null;
      }
      Row row = rows.iterator().next();
      OffsetDateTime slot = row.getOffsetDateTime("slot");
      return new JsonObject()
          .put("id", Long.toString(row.getLong("id")))
          .put("trigger", row.getString("trigger"))
          .put("slot", slot == null ? null : slot.toInstant().toString())
          .put("nodeId", row.getInteger("node_id"))
          .put("repair", row.getBoolean("repair"))
          .put("startedAt", row.getOffsetDateTime("started_at").toInstant().toString())
          .put("finishedAt", row.getOffsetDateTime("finished_at").toInstant().toString())
          .put("report", new JsonObject(row.getString("report")));
    });
  }
}
