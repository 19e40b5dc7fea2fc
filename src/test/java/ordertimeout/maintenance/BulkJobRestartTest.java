package ordertimeout.maintenance;

import io.vertx.core.json.JsonObject;
import ordertimeout.support.Api;
import ordertimeout.support.Await;
import ordertimeout.support.Invariants;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import ordertimeout.support.TestService;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A bulk job interrupted by stopping its node: the next node started goes on where the last committed batch ended
 * (every matched order closed once, stock given back once), or, once the job was interrupted bulkJobs.maxAttempts
 * times, marks it FAILED with what it did.
 */
class BulkJobRestartTest {
  private static final int ORDERS = 120;

  /** Batches of 10 with a pause between them: the job runs for seconds, long enough to stop its node mid-run. */
  private static Map<String, String> slowJobs(int maxAttempts) {
    Map<String, String> settings = new HashMap<>();
    settings.put("OT_BULK_JOBS_BATCH_SIZE", "10");
    settings.put("OT_BULK_JOBS_BATCH_PAUSE_MILLIS", "300");
    settings.put("OT_BULK_JOBS_POLL_MILLIS", "200");
    settings.put("OT_BULK_JOBS_MAX_ATTEMPTS", Integer.toString(maxAttempts));
    return settings;
  }

  @Test
  void aJobInterruptedByStoppingItsNodeIsResumedByTheNextNode() {
    TestDatabase.reset();
    String jobId;
    List<String> orders;
    try (TestService first = TestService.start(slowJobs(5))) {
      orders = startJob(first);
      jobId = interruptWhenHalfDone(first);
    }
    JsonObject stopped = job(jobId);
    assertThat(stopped.getString("status")).as("left for another node, not finished").isEqualTo("RUNNING");
    assertThat(stopped.getLong("done")).isBetween(1L, (long) ORDERS - 1);
    assertThat(Sql.count("SELECT count(*) FROM orders WHERE status = 'CLOSED'")).as("the committed batches' orders, no more")
        .isEqualTo(stopped.getLong("changed"));

    try (TestService second = TestService.start(slowJobs(5))) {
      Await.until("the job finished on the restarted node", Duration.ofSeconds(60),
          () -> "SUCCEEDED".equals(job(second.api(), jobId).getString("status")));
      JsonObject finished = job(second.api(), jobId);
      assertThat(finished.getLong("done")).isEqualTo(ORDERS);
      assertThat(finished.getLong("changed")).isEqualTo(ORDERS);
      assertThat(finished.getInteger("attempts")).as("claimed again after the restart").isEqualTo(2);
      assertThat(orders).allSatisfy(id -> assertThat(second.api().order(id).json().getString("closeReason")).isEqualTo("ADMIN"));
      assertThat(second.api().stock("SKU-J").getLong("reserved")).isZero();
      assertThat(second.api().stock("SKU-J").getLong("available")).isEqualTo(1000);
      Invariants.assertHold();
    }
  }

  @Test
  void aJobInterruptedTooOftenIsMarkedFailedWithWhatItDid() {
    TestDatabase.reset();
    String jobId;
    try (TestService first = TestService.start(slowJobs(1))) {
      startJob(first);
      jobId = interruptWhenHalfDone(first);
    }
    try (TestService second = TestService.start(slowJobs(1))) {
      Await.until("the job marked failed", Duration.ofSeconds(30), () -> "FAILED".equals(job(second.api(), jobId).getString("status")));
      JsonObject failed = job(second.api(), jobId);
      assertThat(failed.getString("error")).contains("interrupted 1 times");
      assertThat(failed.getLong("done") + failed.getLong("failed")).isEqualTo(ORDERS);
      assertThat(failed.getLong("failed")).isPositive();
      assertThat(Sql.count("SELECT count(*) FROM orders WHERE status = 'CLOSED'")).as("what it did stays done")
          .isEqualTo(failed.getLong("changed"));
      Invariants.assertHold();
    }
  }

  private static List<String> startJob(TestService service) {
    service.api().setStock("SKU-J", 1000);
    List<String> orders = service.api().createOrders(ORDERS, 3600, "SKU-J");
    Api.Response submitted = service.api().send(service.api().request("POST", "/v1/admin/orders/bulk-close", Api.ADMIN_KEY,
        new JsonObject().put("filter", new JsonObject().put("sku", "SKU-J")).encode()));
    assertThat(submitted.status()).as(submitted.body()).isEqualTo(202);
    return orders;
  }

  /** Once a few batches committed; the node is then stopped by the caller. */
  private static String interruptWhenHalfDone(TestService service) {
    String jobId = Sql.rows("SELECT id::text AS id FROM bulk_jobs").get(0).get("id").toString();
    Await.until("a few batches committed", Duration.ofSeconds(30), () -> job(service.api(), jobId).getLong("done") >= 20);
    return jobId;
  }

  private static JsonObject job(Api api, String id) {
    return api.get("/v1/admin/jobs/" + id, Api.ADMIN_KEY).json();
  }

  /** Read from the table, with no node running. */
  private static JsonObject job(String id) {
    Map<String, Object> row = Sql.rows("SELECT status, done, changed FROM bulk_jobs WHERE id = ?", Long.parseLong(id)).get(0);
    return new JsonObject().put("status", row.get("status")).put("done", ((Number) row.get("done")).longValue())
        .put("changed", ((Number) row.get("changed")).longValue());
  }
}
