package ordertimeout.maintenance;

import io.vertx.core.json.JsonObject;
import ordertimeout.support.Api;
import ordertimeout.support.Await;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The retention job against the real service, running every second in batches of two rows: it deletes
 * what is past its window (rows aged with SQL) and keeps recent rows (events not yet delivered: WebhookRetentionTest).
 */
class RetentionTest extends ServiceTestBase {
  @Override
  protected Map<String, String> overrides() {
    // the feed's read waits for a lock of the test's own until the test sees it wait (a moment past the 1 s default)
    return Map.of("OT_RETENTION_INTERVAL_SECONDS", "1", "OT_RETENTION_BATCH_SIZE", "2",
        "OT_DATABASE_INTAKE_LOCK_TIMEOUT_MILLIS", "5000");
  }

  @Test
  void deletesOldLogLinesPublishedEventsAndIdempotencyKeysInBatchesAndKeepsTheRest() {
    api.setStock("SKU-1", 100);
    List<Long> old = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      old.add(Long.parseLong(create("u-1", 3600, "SKU-1", 1).getString("id")));
    }
    long recent = Long.parseLong(create("u-1", 3600, "SKU-1", 1).getString("id"));
    long fresh = Long.parseLong(create("u-1", 3600, "SKU-1", 1).getString("id"));
    long deletedBefore = deleted("order_log");
    Long[] oldIds = old.toArray(new Long[0]);

    Sql.execute("UPDATE order_log SET at = now() - interval '73 hours' WHERE order_id = ANY(?)", (Object) oldIds);
    Sql.execute("UPDATE order_log SET at = now() - interval '71 hours' WHERE order_id = ?", recent);
    // no webhook and Kafka off: an event is delivered once the dispatcher has given it its feed position
    Await.until("the events dispatched", Duration.ofSeconds(30), () -> Sql.count("SELECT count(*) FROM outbox_pending") == 0);
    Sql.execute("UPDATE outbox SET created_at = now() - interval '25 hours' WHERE order_id = ANY(?)", (Object) oldIds);
    Sql.execute("UPDATE outbox SET created_at = now() - interval '23 hours' WHERE order_id = ?", recent);
    // keys live retention.idempotencyKeyHours (169: the longest deadline, 7 days and the payment hold, and a bit)
    Sql.execute("UPDATE idempotency_keys SET created_at = now() - interval '170 hours' WHERE order_id = ANY(?)", (Object) oldIds);
    Sql.execute("UPDATE idempotency_keys SET created_at = now() - interval '168 hours' WHERE order_id = ?", recent);

    Await.until("the old rows deleted", Duration.ofSeconds(30), () ->
        Sql.count("SELECT count(*) FROM order_log WHERE order_id = ANY(?)", (Object) oldIds) == 0
            && Sql.count("SELECT count(*) FROM outbox WHERE order_id = ANY(?)", (Object) oldIds) == 0
            && Sql.count("SELECT count(*) FROM idempotency_keys WHERE order_id = ANY(?)", (Object) oldIds) == 0);

    for (long kept : new long[] {recent, fresh}) {
      assertThat(Sql.count("SELECT count(*) FROM order_log WHERE order_id = ?", kept)).isEqualTo(1);
      assertThat(Sql.count("SELECT count(*) FROM outbox WHERE order_id = ?", kept)).isEqualTo(1);
      assertThat(Sql.count("SELECT count(*) FROM idempotency_keys WHERE order_id = ?", kept)).isEqualTo(1);
    }
    assertThat(Sql.count("SELECT count(*) FROM orders")).as("orders themselves are kept").isEqualTo(7);
    Await.until("the counters", Duration.ofSeconds(10), () -> deleted("order_log") - deletedBefore >= 5
        && deleted("outbox") >= 5 && deleted("idempotency_keys") >= 5);
    assertThat(api.get("/metrics", null).body()).contains("ordertimeout_retention_deleted_total{table=\"order_log\"}");
  }

  @Test
  void aFeedReaderWhoseCursorLiesBelowEventsRetentionDeletedIsToldSo() {
    api.setStock("SKU-1", 100);
    Await.until("the events of earlier tests dispatched", Duration.ofSeconds(30),
        () -> Sql.count("SELECT count(*) FROM outbox_pending") == 0);
    long start = Sql.count("SELECT last_position FROM outbox_positions");
    List<Long> read = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      read.add(Long.parseLong(create("u-1", 3600, "SKU-1", 1).getString("id")));
    }
    Await.until("the events dispatched", Duration.ofSeconds(30),
        () -> Sql.count("SELECT count(*) FROM outbox_pending") == 0);
    JsonObject page = api.get("/v1/events?after=" + start + "&limit=1", Api.USER_KEY).json();
    String cursor = page.getString("next"); // the reader has read the first event, then stopped for a while
    long unread = Long.parseLong(create("u-1", 3600, "SKU-1", 1).getString("id"));

    Sql.execute("UPDATE outbox SET created_at = now() - interval '25 hours' WHERE order_id = ANY(?)",
        (Object) new Long[] {read.get(0), read.get(1), read.get(2), unread});
    Await.until("its events deleted", Duration.ofSeconds(30),
        () -> Sql.count("SELECT count(*) FROM outbox WHERE order_id = ?", unread) == 0);

    Api.Response expired = api.get("/v1/events?after=" + cursor, Api.USER_KEY);
    assertThat(expired.status()).as(expired.body()).isEqualTo(410);
    assertThat(expired.code()).isEqualTo("cursor_expired");
    assertThat(api.get("/v1/events?after=0", Api.USER_KEY).status()).as("from the oldest event kept").isEqualTo(200);
    String through = Long.toString(Sql.count("SELECT through FROM outbox_feed_deleted WHERE client = 'dev-user'"));
    assertThat(expired.json().getString("detail")).contains("after=" + through);
    assertThat(api.get("/v1/events?after=" + through, Api.USER_KEY).status()).as("on from the gap").isEqualTo(200);
    assertThat(api.get("/v1/events?after=" + cursor, Api.ADMIN_KEY).status()).as("the admin's feed, every client's")
        .isEqualTo(410);
  }

  /**
   * A retention delete that commits while the feed reads: the page, read after it, starts after the gap, so the mark
   * of what was deleted must be read in the page's snapshot too, not before it. The test's own transaction deletes the
   * reader's next event as retention does (its position, the mark, the event) and holds outbox_feed locked, so that
   * the feed's read of the page waits for it; it commits once that read waits, and the read goes on in a snapshot
   * with the delete. A mark read before the page, in a snapshot of its own, did not have it: 200 after the gap.
   */
  @Test
  void aFeedReaderWhoseNextEventRetentionDeletesWhileItReadsIsToldSo() throws SQLException {
    api.setStock("SKU-1", 100);
    Await.until("the events of earlier tests dispatched", Duration.ofSeconds(30),
        () -> Sql.count("SELECT count(*) FROM outbox_pending") == 0);
    long start = Sql.count("SELECT last_position FROM outbox_positions");
    List<Long> orders = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      orders.add(Long.parseLong(create("u-1", 3600, "SKU-1", 1).getString("id")));
    }
    Await.until("the events dispatched", Duration.ofSeconds(30),
        () -> Sql.count("SELECT count(*) FROM outbox_pending") == 0);
    String cursor = api.get("/v1/events?after=" + start + "&limit=1", Api.USER_KEY).json().getString("next");
    long next = Sql.count("SELECT event_id FROM outbox WHERE order_id = ?", orders.get(1));

    try (Connection retention = TestDatabase.jdbc(); Connection watcher = TestDatabase.jdbc()) {
      retention.setAutoCommit(false);
      Sql.rows(retention, "LOCK TABLE outbox_feed IN ACCESS EXCLUSIVE MODE");
      Sql.rows(retention, """
          WITH unfed AS (DELETE FROM outbox_feed WHERE event_id = ? RETURNING client, position)
          INSERT INTO outbox_feed_deleted AS d (client, through) SELECT coalesce(client, ''), position FROM unfed
          ON CONFLICT (client) DO UPDATE SET through = greatest(d.through, EXCLUDED.through)""", next);
      Sql.rows(retention, "DELETE FROM outbox WHERE event_id = ?", next);
      CompletableFuture<Api.Response> reading =
          api.sendAsync(api.request("GET", "/v1/events?after=" + cursor, Api.USER_KEY, null));
      Await.until("the feed's read of the page waiting for the lock", Duration.ofSeconds(4),
          () -> Sql.count(watcher, """
              SELECT count(*) FROM pg_stat_activity
              WHERE wait_event_type = 'Lock' AND query LIKE '%f.client = $3 AND f.position > $1%'
                AND pid <> pg_backend_pid()""") > 0);
      retention.commit();

      Api.Response answer = reading.orTimeout(30, TimeUnit.SECONDS).join();
      assertThat(answer.status()).as(answer.body()).isEqualTo(410);
      assertThat(answer.code()).isEqualTo("cursor_expired");
    }
  }

  @Test
  void deletesFinishedBulkJobsAndReconciliationRunsPastTheirWindowButNeverTheLatestRun() {
    String job = """
        INSERT INTO bulk_jobs (kind, status, client, ids, total, created_at, finished_at)
        VALUES ('BULK_CLOSE', ?, 'dev-admin', '{1}', 1, now() - interval '100 days', %s) RETURNING id""";
    long oldFinished = Sql.count(job.formatted("now() - interval '91 days'"), "SUCCEEDED");
    long recentFinished = Sql.count(job.formatted("now() - interval '89 days'"), "FAILED");
    long running = Sql.count(job.formatted("NULL"), "RUNNING");
    String run = """
        INSERT INTO reconciliation_runs (trigger, node_id, repair, started_at, finished_at, report)
        VALUES ('REQUEST', 1, false, now() - interval '%d days', now() - interval '%d days', %s) RETURNING id""";
    long oldRun = Sql.count(run.formatted(120, 120, "'{}'"));
    long latestRun = Sql.count(run.formatted(100, 100, "'{}'")); // the latest finished: kept, however old
    long failedAfterIt = Sql.count(run.formatted(95, 95, "NULL"));

    Await.until("the old job and runs deleted", Duration.ofSeconds(30),
        () -> Sql.count("SELECT count(*) FROM bulk_jobs WHERE id = ?", oldFinished) == 0
            && Sql.count("SELECT count(*) FROM reconciliation_runs WHERE id IN (?, ?)", oldRun, failedAfterIt) == 0);
    assertThat(Sql.count("SELECT count(*) FROM bulk_jobs WHERE id IN (?, ?)", recentFinished, running))
        .as("a job finished within the window, and one not finished").isEqualTo(2);
    assertThat(Sql.count("SELECT count(*) FROM reconciliation_runs WHERE id = ?", latestRun))
        .as("the latest finished run, which GET /v1/admin/reconciliation/latest answers").isEqualTo(1);
    assertThat(api.get("/v1/admin/reconciliation/latest", Api.ADMIN_KEY).json().getString("id"))
        .isEqualTo(Long.toString(latestRun));
  }

  @Test
  void aReplayAfterTheIdempotencyWindowCreatesANewOrder() {
    api.setStock("SKU-1", 100);
    String key = UUID.randomUUID().toString();
    JsonObject body = orderBody("u-1", 3600, "SKU-1", 1);
    String first = api.createOrder(key, body).json().getString("id");
    Api.Response replay = api.createOrder(key, body);
    assertThat(replay.json().getString("id")).as("within the window: the stored answer").isEqualTo(first);

    Sql.execute("UPDATE idempotency_keys SET created_at = now() - interval '170 hours' WHERE key = ?", key);
    Await.until("the key expired", Duration.ofSeconds(30), () -> Sql.count("SELECT count(*) FROM idempotency_keys WHERE key = ?", key) == 0);

    Api.Response after = api.createOrder(key, body);
    assertThat(after.status()).isEqualTo(201);
    assertThat(after.json().getString("id")).isNotEqualTo(first);
  }

  private long deleted(String table) {
    return api.stats().getJsonObject("retentionDeleted").getLong(table, 0L);
  }
}
