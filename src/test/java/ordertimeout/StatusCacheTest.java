package ordertimeout;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import ordertimeout.metrics.Meters;
import ordertimeout.support.Api;
import ordertimeout.support.Await;
import ordertimeout.support.Prometheus;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import ordertimeout.support.StockRowLock;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The status cache of a node alone: a create keeps its order (a replayed one keeps nothing), and so do a pay and the
 * wheel's timeout close, as PostgreSQL has it after them; a repeated read is answered from memory, another client's
 * read of a kept order is still not found, and every write (pay, cancel, admin close, extend, payment started, a late
 * pay that reopens, the wheel's timeout close, bulk close and bulk extend) is seen by the very next read, each order
 * having been read (and kept) just before it.
 */
class StatusCacheTest extends ServiceTestBase {
  private static final String SHOP_B = "shop-b-key";
  private static final String READS = Meters.STATUS_CACHE_READS.replace('.', '_') + "_total";

  @Override
  protected Map<String, String> overrides() {
    return Map.of(
        "OT_AUTH_KEYS", "[{key: " + Api.USER_KEY + ", role: user, client: shop-a}, {key: " + SHOP_B + ", role: user, client: shop-b},"
            + " {key: " + Api.ADMIN_KEY + ", role: admin, client: ops}]",
        "OT_ORDERS_REOPEN_ON_LATE_PAYMENT", "true",
        "OT_DATABASE_INTAKE_LOCK_TIMEOUT_MILLIS", "10000");
  }

  @Test
  void aRepeatedReadIsAnsweredFromTheCacheAndStillOnlyToItsClient() {
    api.setStock("SKU-1", 10);
    String id = create("u-1", 600, "SKU-1", 1).getString("id");
    JsonObject first = api.order(id).json();
    double hits = hits();

    assertThat(api.order(id).json()).isEqualTo(first);
    assertThat(hits()).as("the second read was a hit").isEqualTo(hits + 1);
    assertThat(api.as(SHOP_B).order(id).code()).as("another client's read of a kept order").isEqualTo("order_not_found");
    assertThat(api.get("/v1/orders/" + id, Api.ADMIN_KEY).json()).as("an admin's").isEqualTo(first);
    assertThat(hits()).isEqualTo(hits + 3);
  }

  @Test
  void aCreateKeepsItsOrderAsPostgreSqlHasIt() {
    api.setStock("SKU-1", 10);
    api.setStock("SKU-2", 10);
    JsonObject created = create("u-1", 600, "SKU-2", 2, "SKU-1", 1);
    String id = created.getString("id");
    double hits = hits();

    JsonObject first = api.order(id).json();
    assertThat(hits()).as("the first read was a hit").isEqualTo(hits + 1);
    assertThat(first).isEqualTo(created);
    Map<String, Object> stored = Sql.rows("""
        SELECT status, user_id, (extract(epoch FROM created_at) * 1000000)::bigint AS created_micros,
               (extract(epoch FROM close_at) * 1000000)::bigint AS close_micros,
               (extract(epoch FROM remind_at) * 1000000)::bigint AS remind_micros,
               (SELECT string_agg(sku || '=' || qty, ',' ORDER BY sku) FROM order_items WHERE order_id = o.id) AS items
        FROM orders o WHERE id = ?""", Long.parseLong(id)).get(0);
    assertThat(first.getString("status")).isEqualTo(stored.get("status"));
    assertThat(first.getString("userId")).isEqualTo(stored.get("user_id"));
    assertThat(micros(first, "createdAt")).isEqualTo(stored.get("created_micros"));
    assertThat(micros(first, "closeAt")).isEqualTo(stored.get("close_micros"));
    assertThat(micros(first, "remindAt")).isEqualTo(stored.get("remind_micros"));
    assertThat(first.getJsonArray("items").stream().map(item -> (JsonObject) item)
        .map(item -> item.getString("sku") + "=" + item.getInteger("qty")).collect(Collectors.joining(",")))
        .isEqualTo(stored.get("items"));
    assertThat(api.as(SHOP_B).order(id).code()).as("another client's read").isEqualTo("order_not_found");
  }

  /** A replayed create answers the order as first created; that answer must not be kept over a later write. */
  @Test
  void aReplayedCreateKeepsNothing() {
    api.setStock("SKU-1", 10);
    String key = UUID.randomUUID().toString();
    JsonObject body = orderBody("u-1", 600, "SKU-1", 1);
    String id = api.createOrder(key, body).json().getString("id");
    assertThat(api.pay(id).status()).isEqualTo(200);

    Api.Response replayed = api.createOrder(key, body);
    assertThat(replayed.json().getString("status")).as("the replay answers the create's answer").isEqualTo("UNPAID");
    assertThat(statusOf(id)).isEqualTo("PAID");
  }

  @Test
  void everyWriteAnsweredIsSeenByTheNextRead() {
    api.setStock("SKU-1", 10);
    String paid = kept(create("u-1", 600, "SKU-1", 1));
    assertThat(api.pay(paid).status()).isEqualTo(200);
    assertThat(api.order(paid).json().getString("status")).isEqualTo("PAID");

    String cancelled = kept(create("u-2", 600, "SKU-1", 1));
    assertThat(api.cancel(cancelled).status()).isEqualTo(200);
    assertThat(api.order(cancelled).json().getString("closeReason")).isEqualTo("USER_CANCELLED");

    String closedByAdmin = kept(create("u-3", 600, "SKU-1", 1));
    assertThat(api.adminClose(closedByAdmin).status()).isEqualTo(200);
    assertThat(api.order(closedByAdmin).json().getString("closeReason")).isEqualTo("ADMIN");

    JsonObject extendable = create("u-4", 600, "SKU-1", 1);
    String extended = kept(extendable);
    Api.Response moved = api.extend(extended, new JsonObject().put("extendSeconds", 60));
    assertThat(moved.status()).as(moved.body()).isEqualTo(200);
    assertThat(api.order(extended).json().getString("closeAt"))
        .isNotEqualTo(extendable.getString("closeAt"))
        .isEqualTo(moved.json().getString("closeAt"));

    String held = kept(create("u-5", 600, "SKU-1", 1));
    assertThat(api.paymentStarted(held).status()).isEqualTo(200);
    assertThat(api.order(held).json().getString("holdUntil")).isNotNull();
  }

  @Test
  void aTimeoutCloseIsSeenOnceCommittedAndALatePayThatReopensIsSeenAtOnce() {
    api.setStock("SKU-1", 10);
    String id = kept(create("u-1", 2, "SKU-1", 1));
    Await.until("the wheel closed it (in the database)", Duration.ofSeconds(30),
        () -> Sql.count("SELECT count(*) FROM orders WHERE id = ? AND status = 'CLOSED'", Long.parseLong(id)) == 1);
    assertThat(api.order(id).json().getString("closeReason")).isEqualTo("TIMEOUT");

    assertThat(api.order(id).json().getString("status")).as("kept, closed").isEqualTo("CLOSED");
    assertThat(api.pay(id).json().getString("status")).isEqualTo("PAID");
    assertThat(api.order(id).json().getString("status")).as("reopened and paid").isEqualTo("PAID");
  }

  @Test
  void aPayKeepsThePaidOrderAsPostgreSqlHasIt() {
    api.setStock("SKU-1", 10);
    String id = create("u-1", 600, "SKU-1", 1).getString("id");
    JsonObject paid = api.pay(id).json();
    double hits = hits();
    double misses = misses();

    JsonObject read = api.order(id).json();
    assertThat(hits()).as("the first read after the pay was a hit").isEqualTo(hits + 1);
    assertThat(misses()).isEqualTo(misses);
    assertThat(read).isEqualTo(paid);
    Map<String, Object> stored = Sql.rows("SELECT status, (extract(epoch FROM paid_at) * 1000000)::bigint AS "
        + "paid_micros FROM orders WHERE id = ?", Long.parseLong(id)).get(0);
    assertThat(read.getString("status")).isEqualTo(stored.get("status")).isEqualTo("PAID");
    assertThat(micros(read, "paidAt")).isEqualTo(stored.get("paid_micros"));
    assertThat(api.as(SHOP_B).order(id).code()).as("another client's read").isEqualTo("order_not_found");
  }

  /** The close batch answers only what it changed: the order kept from its create, closed. */
  @Test
  void aTimeoutCloseKeepsTheClosedOrderAsPostgreSqlHasIt() {
    api.setStock("SKU-1", 10);
    double closes = timeoutCloses();
    JsonObject created = create("u-1", 1, "SKU-1", 1);
    String id = created.getString("id");
    Await.until("the wheel's close batch answered", Duration.ofSeconds(30), () -> timeoutCloses() > closes);
    double hits = hits();
    double misses = misses();

    JsonObject read = api.order(id).json();
    assertThat(hits()).as("the first read after the close was a hit").isEqualTo(hits + 1);
    assertThat(misses()).isEqualTo(misses);
    Map<String, Object> stored = Sql.rows("""
        SELECT status, close_reason, (extract(epoch FROM closed_at) * 1000000)::bigint AS closed_micros,
               (extract(epoch FROM close_at) * 1000000)::bigint AS close_micros
        FROM orders WHERE id = ?""", Long.parseLong(id)).get(0);
    assertThat(read.getString("status")).isEqualTo(stored.get("status")).isEqualTo("CLOSED");
    assertThat(read.getString("closeReason")).isEqualTo(stored.get("close_reason")).isEqualTo("TIMEOUT");
    assertThat(micros(read, "closedAt")).isEqualTo(stored.get("closed_micros"));
    assertThat(micros(read, "closeAt")).isEqualTo(stored.get("close_micros"));
    for (String unchanged : new String[] {"id", "userId", "category", "items", "createdAt", "closeAt", "remindAt",
        "paidAt", "holdUntil"}) {
      assertThat(read.getValue(unchanged)).as(unchanged).isEqualTo(created.getValue(unchanged));
    }
  }

  /**
   * The late pay is a transaction of its own after the pay group's: reads while it waits for the stock row must not
   * keep the closed order it is about to reopen.
   */
  @Test
  void readsWhileALatePayWaitsKeepNothing() throws Exception {
    api.setStock("SKU-1", 10);
    String id = create("u-1", 1, "SKU-1", 1).getString("id");
    Await.until("the timeout close", Duration.ofSeconds(30), () -> statusOf(id).equals("CLOSED"));
    CompletableFuture<Api.Response> paid;
    try (Connection stockRow = Sql.connectionHoldingStock("SKU-1")) {
      paid = api.postAsync("/v1/orders/" + id + "/pay", Api.USER_KEY);
      Await.until("the late pay waits for the stock row", Duration.ofSeconds(5),
          () -> !StockRowLock.waitingBackends().isEmpty());
      assertThat(statusOf(id)).isEqualTo("CLOSED");
      assertThat(statusOf(id)).isEqualTo("CLOSED");
      stockRow.rollback();
    }
    assertThat(paid.get(10, TimeUnit.SECONDS).json().getString("status")).isEqualTo("PAID");
    assertThat(statusOf(id)).isEqualTo("PAID");
  }

  @Test
  void bulkJobsAreSeenOnceTheyFinished() {
    api.setStock("SKU-1", 10);
    JsonObject toExtend = create("u-1", 600, "SKU-1", 1);
    String extended = kept(toExtend);
    String closed = kept(create("u-2", 600, "SKU-1", 1));

    finish(bulk("bulk-extend", new JsonObject().put("ids", new JsonArray().add(extended)).put("extendSeconds", 120)));
    finish(bulk("bulk-close", new JsonObject().put("ids", new JsonArray().add(closed))));

    assertThat(api.order(extended).json().getString("closeAt")).isNotEqualTo(toExtend.getString("closeAt"));
    assertThat(api.order(closed).json().getString("closeReason")).isEqualTo("ADMIN");
  }

  /** The order's id, after two reads: the second answered from the cache. */
  private String kept(JsonObject order) {
    String id = order.getString("id");
    api.order(id);
    double hits = hits();
    assertThat(api.order(id).json().getString("status")).isEqualTo(order.getString("status"));
    assertThat(hits()).as("order " + id + " kept").isEqualTo(hits + 1);
    return id;
  }

  private String bulk(String action, JsonObject body) {
    Api.Response submitted = api.send(api.request("POST", "/v1/admin/orders/" + action, Api.ADMIN_KEY, body.encode()));
    assertThat(submitted.status()).as(submitted.body()).isEqualTo(202);
    return submitted.json().getString("id");
  }

  private void finish(String jobId) {
    Await.until("job " + jobId + " finished", Duration.ofSeconds(30),
        () -> "SUCCEEDED".equals(api.get("/v1/admin/jobs/" + jobId, Api.ADMIN_KEY).json().getString("status")));
  }

  private static Long micros(JsonObject order, String field) {
    Instant at = Instant.parse(order.getString(field));
    return TimeUnit.SECONDS.toMicros(at.getEpochSecond()) + TimeUnit.NANOSECONDS.toMicros(at.getNano());
  }

  private double hits() {
    return new Prometheus(api.get("/metrics", null).body()).sum(READS, "result", "hit");
  }

  private double misses() {
    return new Prometheus(api.get("/metrics", null).body()).sum(READS, "result", "miss");
  }

  private double timeoutCloses() {
    return new Prometheus(api.get("/metrics", null).body()).sum("ordertimeout_closes_total", "reason", "TIMEOUT");
  }
}
