package ordertimeout.maintenance;

import io.vertx.core.Handler;
import io.vertx.core.eventbus.DeliveryContext;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import ordertimeout.bus.Addresses;
import ordertimeout.bus.Deadlines;
import ordertimeout.clock.WallClock;
import ordertimeout.order.OrderIds;
import ordertimeout.support.Api;
import ordertimeout.support.Await;
import ordertimeout.support.SeedOrders;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import ordertimeout.support.TestDatabase;
import org.junit.jupiter.api.Test;

import java.net.URLEncoder;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * POST /v1/admin/orders/bulk-close and bulk-extend on the real service: dry runs count and change nothing, a job closes
 * exactly the matched unpaid orders once (stock given back once: the invariants after each test), its progress shows
 * while it runs, a request sent again with its Idempotency-Key answers the first one's job, bad bodies answer 400 with
 * their codes, the job list pages by keyset with an opaque cursor of its own.
 */
class BulkJobTest extends ServiceTestBase {
  private static final Duration JOB_TIME = Duration.ofSeconds(30);

  /**
   * Batches of 7: a job of tens of orders runs in several. A submission waits for a lock long enough for a test to send
   * a second one meanwhile.
   */
  @Override
  protected Map<String, String> overrides() {
    return Map.of("OT_BULK_JOBS_BATCH_SIZE", "7", "OT_BULK_JOBS_POLL_MILLIS", "200",
        "OT_DATABASE_INTAKE_LOCK_TIMEOUT_MILLIS", "5000");
  }

  @Test
  void aDryRunCountsAndChangesNothing() {
    api.setStock("SKU-A", 100);
    api.setStock("SKU-B", 100);
    List<String> a = api.createOrders(5, 600, "SKU-A");
    api.createOrders(3, 600, "SKU-B");
    assertThat(api.pay(a.get(0)).status()).isEqualTo(200);

    JsonObject counts = bulk("bulk-close", new JsonObject().put("filter", new JsonObject().put("sku", "SKU-A")).put("dryRun", true));
    assertThat(counts).isEqualTo(new JsonObject().put("dryRun", true).put("kind", "BULK_CLOSE").put("matched", 5).put("unpaid", 4));
    JsonObject byIds = bulk("bulk-extend", new JsonObject().put("ids", new JsonArray().add(a.get(0)).add(a.get(1)).add("12345"))
        .put("extendSeconds", 60).put("dryRun", true));
    assertThat(byIds.getLong("matched")).isEqualTo(2);
    assertThat(byIds.getLong("unpaid")).isEqualTo(1);
    assertThat(Sql.count("SELECT count(*) FROM orders WHERE status = 'UNPAID'")).isEqualTo(7);
    assertThat(Sql.count("SELECT count(*) FROM bulk_jobs")).isZero();
  }

  @Test
  void aBulkCloseClosesExactlyTheMatchedUnpaidOrdersOnceAndShowsItsProgress() throws Exception {
    api.setStock("SKU-A", 1000);
    api.setStock("SKU-B", 1000);
    List<String> matched = api.createOrders(30, 600, "SKU-A");
    List<String> other = api.createOrders(10, 600, "SKU-B");
    List<String> paid = matched.subList(0, 5);
    List<String> cancelled = matched.subList(5, 10);
    paid.forEach(id -> assertThat(api.pay(id).status()).isEqualTo(200));
    cancelled.forEach(id -> assertThat(api.cancel(id).status()).isEqualTo(200));
    // the newest unpaid one comes in the job's last batch (batches go by id; the creates ran concurrently)
    String lastOrder = matched.subList(10, 30).stream().max(Comparator.comparingLong(Long::parseLong)).orElseThrow();

    JsonObject job;
    // the last order's row held: the job commits its first batches, then waits for it
    try (Connection lock = TestDatabase.jdbc()) {
      lock.setAutoCommit(false);
      try (PreparedStatement hold = lock.prepareStatement("SELECT id FROM orders WHERE id = ? FOR UPDATE")) {
        hold.setLong(1, Long.parseLong(lastOrder));
        hold.execute();
      }
      Api.Response submitted = api.send(api.request("POST", "/v1/admin/orders/bulk-close", Api.ADMIN_KEY,
          new JsonObject().put("filter", new JsonObject().put("sku", "SKU-A").put("status", "UNPAID")).encode()));
      assertThat(submitted.status()).as(submitted.body()).isEqualTo(202);
      job = submitted.json();
      assertThat(job.getString("kind")).isEqualTo("BULK_CLOSE");
      assertThat(job.getString("status")).isEqualTo("QUEUED");
      assertThat(job.getLong("total")).isEqualTo(20);
      assertThat(submitted.raw().headers().firstValue("Location")).hasValue("/v1/admin/jobs/" + job.getString("id"));

      String id = job.getString("id");
      Await.until("the job's first batches committed", JOB_TIME, () -> job(id).getLong("done") >= 14);
      JsonObject running = job(id);
      assertThat(running.getString("status")).isEqualTo("RUNNING");
      assertThat(running.getLong("done")).as("the batch with the held order has not committed").isLessThan(20);
      assertThat(running.getLong("changed")).isEqualTo(running.getLong("done"));
      JsonArray listed = api.get("/v1/admin/jobs", Api.ADMIN_KEY).json().getJsonArray("jobs");
      assertThat(listed.getJsonObject(0).getString("id")).isEqualTo(id);
      lock.rollback();
    }

    String id = job.getString("id");
    Await.until("the job finished", JOB_TIME, () -> job(id).getString("status").equals("SUCCEEDED"));
    JsonObject finished = job(id);
    assertThat(finished.getLong("done")).isEqualTo(20);
    assertThat(finished.getLong("changed")).isEqualTo(20);
    assertThat(finished.getLong("skipped")).isZero();
    assertThat(finished.getLong("failed")).isZero();
    assertThat(finished.getString("finishedAt")).isNotNull();

    for (String order : matched) {
      JsonObject now = api.order(order).json();
      if (paid.contains(order)) {
        assertThat(now.getString("status")).isEqualTo("PAID");
      } else if (cancelled.contains(order)) {
        assertThat(now.getString("closeReason")).isEqualTo("USER_CANCELLED");
      } else {
        assertThat(now.getString("status")).isEqualTo("CLOSED");
        assertThat(now.getString("closeReason")).isEqualTo("ADMIN");
      }
    }
    assertThat(other).allSatisfy(order -> assertThat(statusOf(order)).isEqualTo("UNPAID"));
    assertThat(api.stock("SKU-A").getLong("reserved")).isZero();
    assertThat(api.stock("SKU-A").getLong("available")).isEqualTo(1000 - paid.size());
    assertThat(Sql.count("SELECT count(*) FROM outbox WHERE type = 'ORDER_CLOSED'")).isEqualTo(25);
  }

  /**
   * An order id carries the clock of the node that minted it, which may run behind the node that minted the job's
   * bound (decision 0017): an order created after the submission on such a node has an id below the bound and
   * matches the filter, and still is not the job's.
   */
  @Test
  void aBulkCloseByFilterLeavesAnOrderCreatedAfterItsSubmissionWhoseIdIsBelowItsBound() throws Exception {
    api.setStock("SKU-A", 100);
    api.setStock("SKU-L", 100);
    String blocker = api.createOrders(1, 600, "SKU-A").get(0);
    List<String> matched = api.createOrders(3, 600, "SKU-L");
    long upperId = matched.stream().mapToLong(Long::parseLong).max().orElseThrow();

    JsonObject first;
    JsonObject job;
    long late;
    // the node runs one job at a time: a first job, held by its order's row, keeps the second queued meanwhile
    try (Connection lock = TestDatabase.jdbc()) {
      lock.setAutoCommit(false);
      try (PreparedStatement hold = lock.prepareStatement("SELECT id FROM orders WHERE id = ? FOR UPDATE")) {
        hold.setLong(1, Long.parseLong(blocker));
        hold.execute();
      }
      first = bulk("bulk-close", new JsonObject().put("ids", new JsonArray().add(blocker)));
      Await.until("the first job running", JOB_TIME,
          () -> job(first.getString("id")).getString("status").equals("RUNNING"));

      job = bulk("bulk-close", new JsonObject().put("filter", new JsonObject().put("sku", "SKU-L")));
      assertThat(job.getLong("total")).isEqualTo(3);
      assertThat(Sql.count("SELECT upper_id FROM bulk_jobs WHERE id = ?", Long.parseLong(job.getString("id"))))
          .isEqualTo(upperId);
      // created now, on a node whose clock is a second behind the one that minted the bound
      long behind = OrderIds.millisOf(upperId) - 1000 - System.currentTimeMillis();
      late = new OrderIds(1000, new WallClock(behind)).next();
      SeedOrders.insert("SKU-L", new long[] {late}, 600_000, 0, null);
      assertThat(late).isLessThan(upperId);
      assertThat(Sql.count("SELECT count(*) FROM orders o, bulk_jobs j WHERE o.id = ? AND j.id = ?"
          + " AND o.created_at > j.created_at", late, Long.parseLong(job.getString("id"))))
          .as("created after the submission").isEqualTo(1);
      assertThat(job(job.getString("id")).getString("status")).isEqualTo("QUEUED");
      lock.rollback();
    }

    Await.until("both jobs finished", JOB_TIME, () -> job(first.getString("id")).getString("status").equals("SUCCEEDED")
        && job(job.getString("id")).getString("status").equals("SUCCEEDED"));
    JsonObject finished = job(job.getString("id"));
    assertThat(finished.getLong("changed")).isEqualTo(3);
    assertThat(finished.getLong("done")).isEqualTo(3);
    assertThat(matched).allSatisfy(order -> assertThat(statusOf(order)).isEqualTo("CLOSED"));
    assertThat(statusOf(Long.toString(late))).as("the order created after the submission").isEqualTo("UNPAID");
  }

  @Test
  void aBulkCloseByIdsSkipsWhatIsNoLongerUnpaid() {
    api.setStock("SKU-A", 100);
    List<String> orders = api.createOrders(4, 600, "SKU-A");
    assertThat(api.pay(orders.get(0)).status()).isEqualTo(200);
    JsonArray ids = new JsonArray();
    orders.forEach(ids::add);
    ids.add(orders.get(1)).add("12345");
    JsonObject job = bulk("bulk-close", new JsonObject().put("ids", ids));
    assertThat(job.getLong("total")).as("each id once").isEqualTo(5);
    Await.until("the job finished", JOB_TIME, () -> job(job.getString("id")).getString("status").equals("SUCCEEDED"));
    JsonObject finished = job(job.getString("id"));
    assertThat(finished.getLong("changed")).isEqualTo(3);
    assertThat(finished.getLong("skipped")).as("the paid order and the id of no order").isEqualTo(2);
    assertThat(statusOf(orders.get(0))).isEqualTo("PAID");
    assertThat(orders.subList(1, 4)).allSatisfy(order -> assertThat(statusOf(order)).isEqualTo("CLOSED"));
  }

  @Test
  void aBulkExtendMovesTheDeadlinesOfUnpaidOrders() {
    api.setStock("SKU-E", 100);
    List<String> orders = api.createOrders(9, 600, "SKU-E");
    assertThat(api.pay(orders.get(0)).status()).isEqualTo(200);
    List<Instant> before = new ArrayList<>();
    orders.forEach(order -> before.add(Instant.parse(api.order(order).json().getString("closeAt"))));
    JsonObject job = bulk("bulk-extend", new JsonObject().put("filter", new JsonObject().put("sku", "SKU-E")).put("extendSeconds", 120));
    Await.until("the job finished", JOB_TIME, () -> job(job.getString("id")).getString("status").equals("SUCCEEDED"));
    JsonObject finished = job(job.getString("id"));
    assertThat(finished.getLong("changed")).isEqualTo(8);
    assertThat(finished.getLong("skipped")).isEqualTo(1);
    assertThat(finished.getInteger("extendSeconds")).isEqualTo(120);
    for (int i = 0; i < orders.size(); i++) {
      Instant closeAt = Instant.parse(api.order(orders.get(i)).json().getString("closeAt"));
      assertThat(closeAt).isEqualTo(i == 0 ? before.get(i) : before.get(i).plusSeconds(120));
    }
    assertThat(Sql.count("SELECT count(*) FROM outbox WHERE type = 'ORDER_DEADLINE_EXTENDED'")).isEqualTo(8);
    assertThat(Sql.rows("SELECT payload::text AS payload FROM outbox WHERE type = 'ORDER_DEADLINE_EXTENDED'"))
        .as("each event carries its order's items")
        .allSatisfy(event -> assertThat(new JsonObject((String) event.get("payload")).getJsonArray("items"))
            .isEqualTo(new JsonArray().add(new JsonObject().put("sku", "SKU-E").put("qty", 1))));
  }

  /**
   * As an admin's single extend: no deadline past orders.maxTimeoutSeconds (7 days) after the order's creation, so
   * that no order outlives its create's idempotency key; an order the extend would move past it is skipped.
   */
  @Test
  void aBulkExtendStopsAtTheCeilingOfAnAdminsSingleExtend() {
    api.setStock("SKU-C", 10);
    String longer = api.createOrders(1, 600, "SKU-C").get(0);
    String shorter = api.createOrders(1, 60, "SKU-C").get(0);
    Instant longerCloseAt = Instant.parse(api.order(longer).json().getString("closeAt"));
    Instant shorterCloseAt = Instant.parse(api.order(shorter).json().getString("closeAt"));

    // 60 + 604,500 s is within the 604,800 s after the creation; 600 + 604,500 is not
    JsonObject job = bulk("bulk-extend",
        new JsonObject().put("ids", new JsonArray().add(longer).add(shorter)).put("extendSeconds", 604_500));
    Await.until("the job finished", JOB_TIME, () -> job(job.getString("id")).getString("status").equals("SUCCEEDED"));
    JsonObject finished = job(job.getString("id"));
    assertThat(finished.getLong("changed")).isEqualTo(1);
    assertThat(finished.getLong("skipped")).as("the order it would move past the ceiling").isEqualTo(1);
    assertThat(Instant.parse(api.order(longer).json().getString("closeAt"))).isEqualTo(longerCloseAt);
    assertThat(Instant.parse(api.order(shorter).json().getString("closeAt")))
        .isEqualTo(shorterCloseAt.plusSeconds(604_500));
  }

  /**
   * As the single extend: the deadline moves to extendSeconds past the hold's end, the hold is over, and a payment
   * started holds again.
   */
  @Test
  void aBulkExtendPastAPaymentsHoldEndsTheHold() {
    api.setStock("SKU-H", 10);
    String held = api.createOrders(1, 60, "SKU-H").get(0);
    Api.Response started = api.paymentStarted(held);
    assertThat(started.status()).as(started.body()).isEqualTo(200);
    Instant holdUntil = Instant.parse(started.json().getString("holdUntil"));

    JsonObject job = bulk("bulk-extend",
        new JsonObject().put("ids", new JsonArray().add(held)).put("extendSeconds", 3600));
    Await.until("the job finished", JOB_TIME, () -> job(job.getString("id")).getString("status").equals("SUCCEEDED"));
    assertThat(job(job.getString("id")).getLong("changed")).isEqualTo(1);

    JsonObject order = api.order(held).json();
    Instant newCloseAt = Instant.parse(order.getString("closeAt"));
    assertThat(newCloseAt).as("counted from the hold's end").isEqualTo(holdUntil.plusSeconds(3600));
    assertThat(order.getString("holdUntil")).as("the hold the new deadline passed").isNull();
    Api.Response again = api.paymentStarted(held);
    assertThat(again.status()).as(again.body()).isEqualTo(200);
    assertThat(Instant.parse(again.json().getString("holdUntil"))).as("held again, past the new deadline")
        .isAfter(newCloseAt);
  }

  /**
   * An order past its deadline but inside the hold of its started payment is not due, for the bulk extend as for the
   * single one, and extendSeconds counts from the hold's end, which ends. Counted from the past deadline, +300 s left
   * one order before its hold's end (the event written, its due time unmoved) and the other still past (skipped).
   * Each timer goes to the new deadline; each event names the deadline before.
   */
  @Test
  void aBulkExtendOfOrdersInsideTheirPaymentHoldsCountsFromTheHoldsEnd() {
    api.setStock("SKU-H", 10);
    String held = api.createOrders(1, 600, "SKU-H").get(0);
    long heldId = Long.parseLong(held);
    Api.Response started = api.paymentStarted(held);
    assertThat(started.status()).as(started.body()).isEqualTo(200);
    // deadline 100 s ago, the hold's end 600 s ahead: moved from the deadline by 300 s, still before the hold's end
    Sql.execute("UPDATE orders SET close_at = now() - interval '100 seconds', "
        + "hold_until = now() + interval '600 seconds' WHERE id = ?", heldId);
    // deadline 400 s ago, hold to come: moved from the deadline by 300 s, still past
    long longPast = SeedOrders.idsInShard(0, 1)[0];
    SeedOrders.insert("SKU-H", new long[] {longPast}, -400_000, 0, null);
    Sql.execute("UPDATE orders SET hold_until = now() + interval '600 seconds' WHERE id = ?", longPast);
    List<Long> ids = List.of(heldId, longPast);
    Map<Long, Instant> closeAt = new HashMap<>();
    Map<Long, Instant> holdUntil = new HashMap<>();
    ids.forEach(id -> {
      closeAt.put(id, Sql.instantOfOrder("close_at", id));
      holdUntil.put(id, Sql.instantOfOrder("hold_until", id));
    });

    Map<Long, Long> timers = new ConcurrentHashMap<>();
    Handler<DeliveryContext<Object>> tap = delivery -> {
      if (Addresses.TIMER_MOVE.equals(delivery.message().address()) && delivery.body() instanceof Deadlines moved) {
        for (int i = 0; i < moved.orderIds().length; i++) {
          timers.put(moved.orderIds()[i], moved.closeAtMillis()[i]);
        }
      }
      delivery.next();
    };
    service.vertx().eventBus().addOutboundInterceptor(tap);
    try {
      JsonObject job = bulk("bulk-extend", new JsonObject()
          .put("ids", new JsonArray().add(held).add(Long.toString(longPast))).put("extendSeconds", 300));
      Await.until("the job finished", JOB_TIME, () -> job(job.getString("id")).getString("status").equals("SUCCEEDED"));
      JsonObject finished = job(job.getString("id"));
      assertThat(finished.getLong("changed")).as("both orders inside their holds").isEqualTo(2);
      assertThat(finished.getLong("skipped")).isZero();
      Await.until("the job's timer moves sent", JOB_TIME, () -> timers.size() == 2);
    } finally {
      service.vertx().eventBus().removeOutboundInterceptor(tap);
    }

    for (long id : ids) {
      Instant newCloseAt = Sql.instantOfOrder("close_at", id);
      assertThat(newCloseAt).as(id + ": 300 s past the hold's end").isEqualTo(holdUntil.get(id).plusSeconds(300));
      assertThat(Sql.count("SELECT count(*) FROM orders WHERE id = ? AND status = 'UNPAID' AND hold_until IS NULL", id))
          .as(id + ": unpaid, the hold ended").isEqualTo(1);
      assertThat(timers.get(id)).as(id + ": the timer at the new deadline").isEqualTo(newCloseAt.toEpochMilli());
      List<Map<String, Object>> events = Sql.rows("SELECT payload::text AS payload FROM outbox "
          + "WHERE order_id = ? AND type = 'ORDER_DEADLINE_EXTENDED'", id);
      assertThat(events).hasSize(1);
      JsonObject payload = new JsonObject((String) events.get(0).get("payload"));
      assertThat(Instant.parse(payload.getString("closeAt"))).isEqualTo(newCloseAt);
      assertThat(Instant.parse(payload.getString("previousCloseAt"))).as(id + ": the deadline before")
          .isEqualTo(closeAt.get(id));
      assertThat(Sql.count("SELECT count(*) FROM order_log WHERE order_id = ? AND event = 'EXTENDED'", id))
          .isEqualTo(1);
    }
  }

  /**
   * A bulk-extend sent again (its answer lost, or answered 504 outcome_unknown) with its Idempotency-Key answers the
   * first request's job, and each deadline moves once. The key with another request changes nothing; a dry run
   * neither reads nor stores it.
   */
  @Test
  void aBulkExtendSentAgainWithItsIdempotencyKeyMovesEachDeadlineOnce() {
    api.setStock("SKU-K", 10);
    List<String> orders = api.createOrders(3, 600, "SKU-K");
    List<Instant> before = new ArrayList<>();
    orders.forEach(order -> before.add(Instant.parse(api.order(order).json().getString("closeAt"))));
    JsonObject extend = new JsonObject().put("ids", new JsonArray(new ArrayList<>(orders))).put("extendSeconds", 120);

    Api.Response dryRun = api.send(keyed("bulk-extend", extend.copy().put("dryRun", true), "extend-1"));
    assertThat(dryRun.status()).as(dryRun.body()).isEqualTo(200);
    Api.Response first = api.send(keyed("bulk-extend", extend, "extend-1"));
    Api.Response again = api.send(keyed("bulk-extend", extend, "extend-1"));
    assertThat(first.status()).as(first.body()).isEqualTo(202);
    assertThat(again.status()).as(again.body()).isEqualTo(202);
    String id = first.json().getString("id");
    assertThat(again.json().getString("id")).as("the first request's job").isEqualTo(id);
    assertThat(again.json()).as("answered as it was then").isEqualTo(first.json());
    assertThat(again.raw().headers().firstValue("Location")).hasValue("/v1/admin/jobs/" + id);
    Await.until("the job finished", JOB_TIME, () -> job(id).getString("status").equals("SUCCEEDED"));

    Api.Response otherSeconds = api.send(keyed("bulk-extend", extend.copy().put("extendSeconds", 60), "extend-1"));
    Api.Response otherAction = api.send(keyed("bulk-close", new JsonObject().put("ids", extend.getJsonArray("ids")),
        "extend-1"));
    for (Api.Response reused : List.of(otherSeconds, otherAction)) {
      assertThat(reused.status()).as(reused.body()).isEqualTo(422);
      assertThat(reused.code()).isEqualTo("idempotency_key_reused");
    }
    assertThat(Sql.count("SELECT count(*) FROM bulk_jobs")).isEqualTo(1);
    for (int i = 0; i < orders.size(); i++) {
      JsonObject order = api.order(orders.get(i)).json();
      assertThat(order.getString("status")).isEqualTo("UNPAID");
      assertThat(Instant.parse(order.getString("closeAt"))).as("moved once").isEqualTo(before.get(i).plusSeconds(120));
    }
  }

  /** While the first request with a key is still running (its job's insert held here), the key answers 409. */
  @Test
  void aBulkCloseWithTheKeyOfARequestStillRunningAnswers409() throws Exception {
    api.setStock("SKU-P", 10);
    List<String> orders = api.createOrders(2, 600, "SKU-P");
    JsonObject close = new JsonObject().put("ids", new JsonArray(new ArrayList<>(orders)));
    CompletableFuture<Api.Response> first;
    try (Connection lock = TestDatabase.jdbc(); Statement statement = lock.createStatement()) {
      lock.setAutoCommit(false);
      statement.execute("LOCK TABLE bulk_jobs IN SHARE MODE");
      first = api.sendAsync(keyed("bulk-close", close, "close-1"));
      Await.until("the first request waiting to insert its job", JOB_TIME, () -> Sql.count("SELECT count(*) FROM "
          + "pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO bulk_jobs%'") == 1);
      Api.Response second = api.send(keyed("bulk-close", close, "close-1"));
      assertThat(second.status()).as(second.body()).isEqualTo(409);
      assertThat(second.code()).isEqualTo("request_in_progress");
      lock.rollback();
    }
    Api.Response answered = first.get(30, TimeUnit.SECONDS);
    assertThat(answered.status()).as(answered.body()).isEqualTo(202);
    String id = answered.json().getString("id");
    Await.until("the job finished", JOB_TIME, () -> job(id).getString("status").equals("SUCCEEDED"));
    assertThat(Sql.count("SELECT count(*) FROM bulk_jobs")).isEqualTo(1);
    assertThat(orders).allSatisfy(order -> assertThat(statusOf(order)).isEqualTo("CLOSED"));
  }

  @Test
  void badBodiesAnswer400WithTheirCodes() {
    assertCode("bulk-close", "{}", "ids_or_filter");
    assertCode("bulk-close", "{\"ids\":[\"1\"],\"filter\":{\"sku\":\"A\"}}", "ids_or_filter");
    assertCode("bulk-close", "{\"filter\":{}}", "empty_filter");
    assertCode("bulk-close", "{\"filter\":{\"dueBefore\":\"tomorrow\"}}", "invalid_filter");
    assertCode("bulk-close", "{\"filter\":{\"status\":\"LOST\"}}", "invalid_filter");
    assertCode("bulk-close", "{\"filter\":{\"shop\":\"x\"}}", "unknown_field");
    assertCode("bulk-close", "{\"ids\":[]}", "invalid_field");
    assertCode("bulk-close", "{\"ids\":[\"9999999999999999999\"]}", "invalid_order_id");
    assertCode("bulk-extend", "{\"ids\":[\"1\"]}", "invalid_field");
    assertCode("bulk-extend", "{\"ids\":[\"1\"],\"extendSeconds\":0}", "invalid_field");
    assertCode("bulk-close", "[1]", "malformed_json");
    JsonObject oneId = new JsonObject().put("ids", new JsonArray().add("1"));
    Api.Response badKey = api.send(keyed("bulk-close", oneId, "two words"));
    assertThat(badKey.status()).as(badKey.body()).isEqualTo(400);
    assertThat(badKey.code()).isEqualTo("invalid_idempotency_key");
    assertThat(Sql.count("SELECT count(*) FROM bulk_jobs")).isZero();
    Api.Response none = api.get("/v1/admin/jobs/424242", Api.ADMIN_KEY);
    assertThat(none.status()).isEqualTo(404);
    assertThat(none.code()).isEqualTo("job_not_found");
    Api.Response notANumber = api.get("/v1/admin/jobs/x1", Api.ADMIN_KEY);
    assertThat(notANumber.status()).isEqualTo(400);
    assertThat(notANumber.code()).isEqualTo("invalid_job_id");
    assertThat(api.send(api.request("POST", "/v1/admin/orders/bulk-close", Api.USER_KEY, "{\"ids\":[\"1\"]}")).status()).isEqualTo(403);
  }

  /**
   * GET /v1/admin/jobs pages as the search does: every job once, newest first, a job submitted meanwhile on no later
   * page; {@code next} null on the last page, also when it is exactly full.
   */
  @Test
  void theJobListPagesThroughEveryJobNewestFirst() {
    List<String> newestFirst = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      newestFirst.add(0, submitJobOfNoOrder());
    }
    List<String> submittedWhilePaging = new ArrayList<>();

    List<JsonObject> byFours = jobPages(4, () -> submittedWhilePaging.add(0, submitJobOfNoOrder()));
    assertThat(byFours).extracting(page -> page.getJsonArray("jobs").size()).containsExactly(4, 4, 2);
    assertThat(jobIds(byFours)).as("each job once, newest first; none submitted while paging")
        .containsExactlyElementsOf(newestFirst);

    newestFirst.addAll(0, submittedWhilePaging);
    assertThat(newestFirst).hasSize(12);
    List<JsonObject> bySixes = jobPages(6, () -> {});
    assertThat(bySixes).extracting(page -> page.getJsonArray("jobs").size()).containsExactly(6, 6);
    assertThat(bySixes.get(1).getValue("next")).as("a full last page is the last").isNull();
    assertThat(jobIds(bySixes)).containsExactlyElementsOf(newestFirst);
  }

  @Test
  void aCursorTheJobListDidNotHandOutAnswers400() {
    api.setStock("SKU-A", 10);
    api.createOrders(2, 600, "SKU-A");
    String searchCursor = api.get("/v1/admin/orders?limit=1", Api.ADMIN_KEY).json().getString("next");
    assertThat(searchCursor).isNotNull();
    for (String cursor : List.of("not-a-cursor", "%21%21", searchCursor, "x".repeat(65))) {
      Api.Response response = api.get("/v1/admin/jobs?limit=1&cursor=" + cursor, Api.ADMIN_KEY);
      assertThat(response.status()).as(cursor + ": " + response.body()).isEqualTo(400);
      assertThat(response.code()).as(cursor).isEqualTo("invalid_cursor");
    }
  }

  /** The search's parameters and a bulk body's filter are the same fields: a bad value answers the same code. */
  @Test
  void aBadFilterValueAnswersInvalidFilterInTheSearchAndInABulkBody() {
    Map<String, String> badValues = Map.of("sku", "SKU 1", "client", "c".repeat(65), "userId", "",
        "status", "LOST", "dueAfter", "2026-12-01T09:00:00Z".repeat(4), "createdBefore", "tomorrow");
    badValues.forEach((field, value) -> {
      String query = field + "=" + URLEncoder.encode(value, StandardCharsets.UTF_8);
      Api.Response search = api.get("/v1/admin/orders?" + query, Api.ADMIN_KEY);
      assertThat(search.status()).as("search by " + field + ": " + search.body()).isEqualTo(400);
      assertThat(search.code()).as("search by " + field).isEqualTo("invalid_filter");
      JsonObject filter = new JsonObject().put(field, value);
      assertCode("bulk-close", new JsonObject().put("filter", filter).encode(), "invalid_filter");
      assertCode("bulk-extend", new JsonObject().put("filter", filter).put("extendSeconds", 60).encode(),
          "invalid_filter");
    });
    assertCode("bulk-close", "{\"filter\":{\"sku\":1}}", "invalid_filter");
    assertCode("bulk-close", "{\"filter\":{\"status\":true}}", "invalid_filter");
    assertThat(Sql.count("SELECT count(*) FROM bulk_jobs")).isZero();
  }

  private void assertCode(String action, String body, String code) {
    Api.Response response = api.send(api.request("POST", "/v1/admin/orders/" + action, Api.ADMIN_KEY, body));
    assertThat(response.status()).as(body + ": " + response.body()).isEqualTo(400);
    assertThat(response.code()).as(body).isEqualTo(code);
  }

  private HttpRequest.Builder keyed(String action, JsonObject body, String idempotencyKey) {
    return api.request("POST", "/v1/admin/orders/" + action, Api.ADMIN_KEY, body.encode())
        .header("Idempotency-Key", idempotencyKey);
  }


  private JsonObject bulk(String action, JsonObject body) {
    Api.Response response = api.send(api.request("POST", "/v1/admin/orders/" + action, Api.ADMIN_KEY, body.encode()));
    assertThat(response.status()).as(response.body()).isIn(200, 202);
    return response.json();
  }

  /** A bulk-close of an id of no order, which skips it: a job that finishes at once; its id. */
  private String submitJobOfNoOrder() {
    return bulk("bulk-close", new JsonObject().put("ids", new JsonArray().add("1"))).getString("id");
  }

  /** Every page of the job list, {@code limit} a page, with {@code betweenPages} run after each page but the last. */
  private List<JsonObject> jobPages(int limit, Runnable betweenPages) {
    List<JsonObject> pages = new ArrayList<>();
    String cursor = null;
    do {
      Api.Response response = api.get("/v1/admin/jobs?limit=" + limit + (cursor == null ? "" : "&cursor=" + cursor),
          Api.ADMIN_KEY);
      assertThat(response.status()).as(response.body()).isEqualTo(200);
      pages.add(response.json());
      cursor = response.json().getString("next");
      if (cursor != null) {
        betweenPages.run();
      }
    } while (cursor != null && pages.size() < 10);
    return pages;
  }

  private static List<String> jobIds(List<JsonObject> pages) {
    List<String> ids = new ArrayList<>();
    pages.forEach(page -> page.getJsonArray("jobs").forEach(job -> ids.add(((JsonObject) job).getString("id"))));
    return ids;
  }

  private JsonObject job(String id) {
    Api.Response response = api.get("/v1/admin/jobs/" + id, Api.ADMIN_KEY);
    assertThat(response.status()).as(response.body()).isEqualTo(200);
    return response.json();
  }
}
