package ordertimeout.delivery;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import ordertimeout.metrics.Alarms;
import ordertimeout.support.Api;
import ordertimeout.support.Await;
import ordertimeout.support.Metrics;
import ordertimeout.support.Prometheus;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import ordertimeout.support.WebhookReceiver;
import ordertimeout.support.WebhookReceiver.Received;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Comparator;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Webhooks against the real service on the embedded default (Kafka off) and a small HTTP server standing in for the
 * shop: "/all" takes every event, "/closed" only the ORDER_CLOSED events of client dev-user and has a whsec_ secret.
 * Every request's Standard Webhooks signature is checked here with the secret; one order's events arrive one after
 * the other; a failing receiver is retried with backoff for events.retrySeconds (2 s here), then its delivery is
 * listed as failed and the retry route sends it again; retention keeps an undelivered event until the maximum age,
 * then drops it and counts it; deliveries to a webhook no longer configured stay pending and hold no other back.
 */
class WebhookTest extends ServiceTestBase {
  private static final String ALL_SECRET = "all-events-secret-0123456789";
  private static final byte[] CLOSED_KEY = "closed-events-key-bytes-32-long!".getBytes(StandardCharsets.UTF_8);
  private static final String CLOSED_SECRET = "whsec_" + Base64.getEncoder().encodeToString(CLOSED_KEY);
  private static final String OTHER_KEY = "other-client-key";
  private static final long BACKOFF_MIN_MILLIS = 100;
  private static final long BACKOFF_MAX_MILLIS = 400;

  private WebhookReceiver receiver;

  @Override
  protected Map<String, String> overrides() {
    receiver = new WebhookReceiver();
    return Map.of(
        "OT_AUTH_KEYS", "[{key: dev-user-key, role: user, client: dev-user}, {key: dev-admin-key, role: admin, client: dev-admin},"
            + " {key: " + OTHER_KEY + ", role: user, client: other}]",
        "OT_WEBHOOKS", "[{url: '" + receiver.url("/all") + "', secret: " + ALL_SECRET + "},"
            + " {url: '" + receiver.url("/closed") + "', secret: '" + CLOSED_SECRET + "', types: [ORDER_CLOSED], client: dev-user}]",
        "OT_EVENTS_RETRY_SECONDS", "2",
        "OT_EVENTS_BACKOFF_MIN_MILLIS", Long.toString(BACKOFF_MIN_MILLIS),
        "OT_EVENTS_BACKOFF_MAX_MILLIS", Long.toString(BACKOFF_MAX_MILLIS),
        "OT_EVENTS_TIMEOUT_MILLIS", "5000",
        "OT_RETENTION_INTERVAL_SECONDS", "1",
        "OT_ALARMS_EVALUATE_SECONDS", "1");
  }

  @BeforeEach
  void clearReceiver() {
    receiver.clear();
  }

  @AfterAll
  void stopReceiver() {
    receiver.close();
  }

  @Test
  void everyEventArrivesSignedWithTheWholeOrderAndOneOrdersEventsInTheOrderWritten() {
    api.setStock("SKU-1", 100);
    api.setStock("SKU-2", 100);
    // each ORDER_CREATED is answered late: the order's next event must wait for that answer
    receiver.delay("ORDER_CREATED", 300);
    String paid = create("u-1", 3600, "SKU-1", 2, "SKU-2", 1).getString("id");
    String cancelled = create("u-1", 3600, "SKU-1", 1).getString("id");
    String closedByAdmin = create("u-2", 3600, "SKU-2", 3).getString("id");
    assertThat(api.pay(paid).status()).isEqualTo(200);
    assertThat(api.cancel(cancelled).status()).isEqualTo(200);
    assertThat(api.adminClose(closedByAdmin).status()).isEqualTo(200);
    Api.Response other = api.as(OTHER_KEY).createOrder("other-1", orderBody("u-9", 3600, "SKU-1", 1));
    String othersOrder = other.json().getString("id");
    assertThat(api.as(OTHER_KEY).cancel(othersOrder).status()).isEqualTo(200);

    List<String> orders = List.of(paid, cancelled, closedByAdmin, othersOrder);
    Await.until("two events of each order at /all", Duration.ofSeconds(30),
        () -> orders.stream().allMatch(id -> ofOrder("/all", id).size() >= 2));
    Await.until("the closes of dev-user at /closed", Duration.ofSeconds(30), () -> about("/closed", orders).size() >= 2);

    for (String id : orders) {
      List<Received> events = ofOrder("/all", id);
      assertThat(events).extracting(Received::id).as("one request per event of order " + id).containsExactlyElementsOf(eventIds(id));
      assertThat(events.get(0).type()).isEqualTo("ORDER_CREATED");
      assertThat(events.get(1).receivedNanos()).as("order %s's second event waited for the answer to its first", id)
          .isGreaterThanOrEqualTo(events.get(0).answeredNanos());
      events.forEach(event -> assertSigned(event, ALL_SECRET.getBytes(StandardCharsets.UTF_8)));
    }
    assertThat(ofOrder("/all", paid)).extracting(Received::type).containsExactly("ORDER_CREATED", "ORDER_PAID");
    assertThat(ofOrder("/all", cancelled)).extracting(Received::type).containsExactly("ORDER_CREATED", "ORDER_CLOSED");

    JsonObject created = ofOrder("/all", paid).get(0).json().getJsonObject("data");
    assertThat(created.getString("orderId")).isEqualTo(paid);
    assertThat(created.getString("client")).isEqualTo("dev-user");
    assertThat(created.getString("userId")).isEqualTo("u-1");
    assertThat(created.getString("status")).isEqualTo("UNPAID");
    assertThat(created.getJsonArray("items")).isEqualTo(new JsonArray()
        .add(new JsonObject().put("sku", "SKU-1").put("qty", 2)).add(new JsonObject().put("sku", "SKU-2").put("qty", 1)));
    assertThat(Instant.parse(created.getString("closeAt"))).isEqualTo(Instant.parse(api.order(paid).json().getString("closeAt")));
    JsonObject paidEvent = ofOrder("/all", paid).get(1).json().getJsonObject("data");
    assertThat(paidEvent.getString("status")).isEqualTo("PAID");
    assertThat(paidEvent.getString("userId")).isEqualTo("u-1");
    assertThat(paidEvent.getJsonArray("items")).isEqualTo(created.getJsonArray("items"));
    assertThat(Instant.parse(paidEvent.getString("paidAt"))).isEqualTo(Instant.parse(api.order(paid).json().getString("paidAt")));
    assertThat(paidEvent.containsKey("closedAt")).isFalse();
    JsonObject closed = ofOrder("/all", cancelled).get(1).json().getJsonObject("data");
    assertThat(closed.getString("status")).isEqualTo("CLOSED");
    assertThat(closed.getString("reason")).isEqualTo("USER_CANCELLED");
    assertThat(closed.getString("client")).isEqualTo("dev-user");
    assertThat(closed.getJsonArray("items")).hasSize(1);
    assertThat(closed.getString("closeAt")).isNotNull();
    assertThat(Instant.parse(closed.getString("closedAt"))).isEqualTo(Instant.parse(api.order(cancelled).json().getString("closedAt")));

    Await.until("nothing more at /closed", Duration.ofSeconds(5),
        () -> Sql.count("SELECT count(*) FROM webhook_deliveries WHERE status = 'PENDING'") == 0);
    List<Received> closes = about("/closed", orders);
    assertThat(closes).extracting(Received::orderId).as("dev-user's closes only").containsExactlyInAnyOrder(cancelled, closedByAdmin);
    assertThat(closes).extracting(Received::type).containsOnly("ORDER_CLOSED");
    closes.forEach(event -> assertSigned(event, CLOSED_KEY));
    assertThat(Metrics.value(api, "ordertimeout_webhook_attempts_total{outcome=\"delivered\"}")).isGreaterThanOrEqualTo(10);
  }

  @Test
  void aFailingReceiverIsRetriedWithBackoffThenListedAsFailedAndTheRetryRouteSendsItAgain() {
    api.setStock("SKU-1", 100);
    receiver.answer("/closed", 500);
    String id = create("u-1", 3600, "SKU-1", 1).getString("id");
    assertThat(api.cancel(id).status()).isEqualTo(200);

    Await.until("the delivery failed", Duration.ofSeconds(30), () -> failed().size() == 1);
    JsonObject delivery = failed().getJsonObject(0);
    assertThat(delivery.getString("orderId")).isEqualTo(id);
    assertThat(delivery.getString("type")).isEqualTo("ORDER_CLOSED");
    assertThat(delivery.getString("url")).isEqualTo(receiver.url("/closed"));
    assertThat(delivery.getString("lastError")).isEqualTo("HTTP 500");
    assertThat(delivery.getValue("nextAttemptAt")).isNull();
    List<Received> attempts = about("/closed", List.of(id)).stream().sorted(Comparator.comparingLong(Received::receivedNanos)).toList();
    assertThat(attempts).hasSize(delivery.getInteger("attempts"));
    assertThat(attempts.size()).as("retried for 2 s with backoff from 100 ms").isGreaterThanOrEqualTo(3);
    assertThat(attempts).extracting(Received::id).containsOnly(attempts.get(0).id());
    for (int i = 1; i < attempts.size(); i++) {
      long gapMillis = (attempts.get(i).receivedNanos() - attempts.get(i - 1).receivedNanos()) / 1_000_000;
      long backoff = Math.min(BACKOFF_MAX_MILLIS, BACKOFF_MIN_MILLIS << Math.min(i - 1, 20));
      assertThat(gapMillis).as("gap before attempt %d: at least half its backoff of %d ms", i + 1, backoff).isGreaterThanOrEqualTo(backoff / 2);
    }
    assertThat(Metrics.value(api, "ordertimeout_webhook_attempts_total{outcome=\"failed\"}")).isGreaterThanOrEqualTo(1);

    receiver.answer("/closed", 204);
    String deliveryId = delivery.getString("id");
    Api.Response retried = api.post("/v1/admin/webhooks/deliveries/" + deliveryId + "/retry", Api.ADMIN_KEY);
    assertThat(retried.status()).as(retried.body()).isEqualTo(200);
    assertThat(retried.json().getString("status")).isEqualTo("PENDING");
    Await.until("the retried delivery delivered", Duration.ofSeconds(30), () -> "DELIVERED".equals(
        Sql.rows("SELECT status FROM webhook_deliveries WHERE id = ?", Long.parseLong(deliveryId)).get(0).get("status")));
    Received resent = about("/closed", List.of(id)).stream().filter(r -> r.status() == 204).findFirst().orElseThrow();
    assertThat(resent.id()).as("the same webhook-id").isEqualTo(attempts.get(0).id());
    assertSigned(resent, CLOSED_KEY);
    assertThat(failed()).isEmpty();

    Api.Response again = api.post("/v1/admin/webhooks/deliveries/" + deliveryId + "/retry", Api.ADMIN_KEY);
    assertThat(again.status()).isEqualTo(409);
    assertThat(again.code()).isEqualTo("delivery_not_failed");
    assertThat(api.post("/v1/admin/webhooks/deliveries/999999999/retry", Api.ADMIN_KEY).code()).isEqualTo("delivery_not_found");
    assertThat(api.post("/v1/admin/webhooks/deliveries/abc/retry", Api.ADMIN_KEY).code()).isEqualTo("invalid_delivery_id");
    assertThat(api.post("/v1/admin/webhooks/deliveries/" + deliveryId + "/retry", Api.USER_KEY).status()).isEqualTo(403);
    assertThat(api.get("/v1/admin/webhooks/deliveries?status=lost", Api.ADMIN_KEY).code()).isEqualTo("invalid_field");
    assertThat(api.get("/v1/admin/webhooks/deliveries?status=delivered", Api.ADMIN_KEY).json().getJsonArray("deliveries"))
        .extracting(d -> ((JsonObject) d).getString("id")).contains(deliveryId);
  }

  @Test
  void retentionKeepsAnUndeliveredEventUntilTheMaximumAgeThenDropsAndCountsIt() {
    api.setStock("SKU-1", 100);
    receiver.answer("/closed", 500);
    String id = create("u-1", 3600, "SKU-1", 1).getString("id");
    assertThat(api.cancel(id).status()).isEqualTo(200);
    Await.until("the create delivered to /all, the close failed at /closed", Duration.ofSeconds(30), () ->
        Sql.count("SELECT count(*) FROM webhook_deliveries WHERE status = 'DELIVERED'") == 2 && failed().size() == 1);
    double droppedBefore = Metrics.value(api, "ordertimeout_events_dropped_undelivered_total");

    Sql.execute("UPDATE outbox SET created_at = now() - interval '25 hours' WHERE order_id = ?", Long.parseLong(id));
    Await.until("the delivered create deleted", Duration.ofSeconds(30),
        () -> Sql.count("SELECT count(*) FROM outbox WHERE order_id = ? AND type = 'ORDER_CREATED'", Long.parseLong(id)) == 0);
    assertThat(Sql.count("SELECT count(*) FROM outbox WHERE order_id = ? AND type = 'ORDER_CLOSED'", Long.parseLong(id)))
        .as("the close /closed never had is kept").isEqualTo(1);
    assertThat(Metrics.value(api, "ordertimeout_events_dropped_undelivered_total")).isEqualTo(droppedBefore);

    Sql.execute("UPDATE outbox SET created_at = now() - interval '8 days' WHERE order_id = ?", Long.parseLong(id));
    Await.until("the undelivered close dropped at 7 days", Duration.ofSeconds(30),
        () -> Sql.count("SELECT count(*) FROM outbox WHERE order_id = ?", Long.parseLong(id)) == 0);
    assertThat(Sql.count("SELECT count(*) FROM webhook_deliveries")).as("deliveries go with their events").isZero();
    assertThat(Metrics.value(api, "ordertimeout_events_dropped_undelivered_total")).isEqualTo(droppedBefore + 1);
    Await.until("the alarm", Duration.ofSeconds(30), () -> service.service().alarms().isFiring(Alarms.Code.EVENTS_DROPPED));
    // the invariants expect a closed order's ORDER_CLOSED event, which retention took: the order leaves with it
    Sql.execute("DELETE FROM order_items WHERE order_id = ?", Long.parseLong(id));
    Sql.execute("DELETE FROM order_log WHERE order_id = ?", Long.parseLong(id));
    Sql.execute("DELETE FROM orders WHERE id = ?", Long.parseLong(id));
  }

  @Test
  void deliveriesToAWebhookNoLongerConfiguredStayPendingAndHoldNoOtherWebhookBack() {
    api.setStock("SKU-1", 100);
    String earlier = create("u-1", 3600, "SKU-1", 1).getString("id");
    Await.until("the earlier order's create at /all", Duration.ofSeconds(30),
        () -> ofOrder("/all", earlier).size() == 1);
    // more than events.maxInFlight (32) due deliveries, ahead of every other, to webhooks this node no longer has
    Sql.execute("""
        INSERT INTO webhook_deliveries (event_id, position, order_id, shard, sink)
        SELECT d.event_id, 0, d.order_id, d.shard, ?::text || n FROM webhook_deliveries d, generate_series(1, 40) n
        WHERE d.order_id = ? AND d.sink = ?""",
        receiver.url("/removed-"), Long.parseLong(earlier), receiver.url("/all"));

    String id = create("u-1", 3600, "SKU-1", 1).getString("id");
    assertThat(api.cancel(id).status()).isEqualTo(200);
    Await.until("the later order's create and close at /all, its close at /closed", Duration.ofSeconds(30),
        () -> ofOrder("/all", id).size() == 2 && ofOrder("/closed", id).size() == 1);
    assertThat(ofOrder("/all", id)).extracting(Received::type).containsExactly("ORDER_CREATED", "ORDER_CLOSED");
    assertThat(Sql.count("SELECT count(*) FROM webhook_deliveries WHERE sink LIKE ? AND status = 'PENDING'"
        + " AND attempts = 0", receiver.url("/removed-%"))).as("the removed webhooks' deliveries, never tried")
        .isEqualTo(40);
  }

  /**
   * A retry answers the delivery it sent again, or 404: retention may delete the delivery's event (and with it the
   * delivery) right after the retry took it, and then the delivery after it is not its answer.
   */
  @Test
  void aRetriedDeliveryWhoseEventRetentionDeletedMeanwhileAnswers404() {
    api.setStock("SKU-1", 100);
    String id = create("u-1", 3600, "SKU-1", 1).getString("id");
    assertThat(api.cancel(id).status()).isEqualTo(200);
    Await.until("the order's create and close at /all", Duration.ofSeconds(30), () -> ofOrder("/all", id).size() == 2);
    // The create's delivery failed; the close's comes after it. Both to a webhook no node has: nothing sends them.
    List<Map<String, Object>> events = Sql.rows("SELECT event_id FROM outbox WHERE order_id = ? ORDER BY event_id",
        Long.parseLong(id));
    long created = (Long) events.get(0).get("event_id");
    long closed = (Long) events.get(1).get("event_id");
    String insert = "INSERT INTO webhook_deliveries (event_id, position, order_id, shard, sink, status) "
        + "SELECT event_id, 0, order_id, 0, ?, ? FROM outbox WHERE event_id = ? RETURNING id";
    long retried = (Long) Sql.rows(insert, receiver.url("/gone"), "FAILED", created).get(0).get("id");
    Sql.rows(insert, receiver.url("/gone"), "PENDING", closed);
    Sql.execute("""
        CREATE FUNCTION retention_meanwhile() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          DELETE FROM outbox WHERE event_id = %d;
          RETURN NULL;
        END $$""".formatted(created));
    Sql.executeDdl("CREATE TRIGGER retention_meanwhile AFTER UPDATE ON webhook_deliveries "
        + "FOR EACH STATEMENT EXECUTE FUNCTION retention_meanwhile()");
    try {
      Api.Response retry = api.post("/v1/admin/webhooks/deliveries/" + retried + "/retry", Api.ADMIN_KEY);
      assertThat(retry.status()).as(retry.body()).isEqualTo(404);
      assertThat(retry.code()).isEqualTo("delivery_not_found");
    } finally {
      Sql.executeDdl("DROP TRIGGER retention_meanwhile ON webhook_deliveries");
      Sql.execute("DROP FUNCTION retention_meanwhile()");
    }
  }

  /** The deliveries' list has a {@code next} only when more follow: a last page that happens to be full has none. */
  @Test
  void anExactlyFullLastPageOfDeliveriesHasNoNext() {
    api.setStock("SKU-1", 100);
    String id = create("u-1", 3600, "SKU-1", 1).getString("id");
    List<String> ids = failedDeliveriesOf(id, 2);
    String list = "/v1/admin/webhooks/deliveries?status=failed";
    JsonObject whole = api.get(list + "&limit=2", Api.ADMIN_KEY).json();
    assertThat(whole.getJsonArray("deliveries")).hasSize(2);
    assertThat(whole.getValue("next")).as("both on one full page").isNull();
    JsonObject first = api.get(list + "&limit=1", Api.ADMIN_KEY).json();
    assertThat(first.getJsonArray("deliveries")).hasSize(1);
    assertThat(first.getString("next")).isNotNull();
    JsonObject last = api.get(list + "&limit=1&cursor=" + first.getString("next"), Api.ADMIN_KEY).json();
    assertThat(last.getJsonArray("deliveries")).extracting(d -> ((JsonObject) d).getString("id"))
        .containsExactly(ids.get(1));
    assertThat(last.getValue("next")).as("the last page, full").isNull();
  }

  /** {@code count} failed deliveries of order {@code orderId}'s create, to webhooks no node has: nothing sends them. */
  private List<String> failedDeliveriesOf(String orderId, int count) {
    String insert = "INSERT INTO webhook_deliveries (event_id, position, order_id, shard, sink, status) "
        + "SELECT event_id, 0, order_id, 0, ?, 'FAILED' FROM outbox WHERE order_id = ? RETURNING id";
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      ids.add(Sql.rows(insert, receiver.url("/gone-" + i), Long.parseLong(orderId)).get(0).get("id").toString());
    }
    return ids;
  }

  /**
   * The deliveries' list pages by id with an opaque cursor of its own, given as {@code cursor} or by its old name
   * {@code after}; the raw delivery id it handed out before is still taken, and counted; a cursor it did not hand out
   * (garbage, another list's, beyond 64 bits) or one given under both names answers 400 invalid_cursor.
   */
  @Test
  void theDeliveriesListPagesWithAnOpaqueCursorAndRefusesABadOne() {
    api.setStock("SKU-1", 100);
    String id = create("u-1", 3600, "SKU-1", 1).getString("id");
    List<String> ids = failedDeliveriesOf(id, 3);
    String list = "/v1/admin/webhooks/deliveries?status=failed&limit=2";
    double rawBefore = rawCursorsOf("deliveries");
    JsonObject first = api.get(list, Api.ADMIN_KEY).json();
    assertThat(deliveryIds(first)).containsExactlyElementsOf(ids.subList(0, 2));
    String next = first.getString("next");
    assertThat(next).as("opaque, not the raw id").doesNotContain(ids.get(1)).doesNotMatch("[0-9]+");
    for (String name : List.of("cursor", "after")) {
      JsonObject second = api.get(list + "&" + name + "=" + next, Api.ADMIN_KEY).json();
      assertThat(deliveryIds(second)).as(name).containsExactlyElementsOf(ids.subList(2, 3));
      assertThat(second.getValue("next")).as(name).isNull();
    }
    assertThat(rawCursorsOf("deliveries")).as("opaque cursors are not counted").isEqualTo(rawBefore);

    JsonObject afterRawId = api.get(list + "&cursor=" + ids.get(0), Api.ADMIN_KEY).json();
    assertThat(deliveryIds(afterRawId)).as("a raw delivery id, the cursor of before")
        .containsExactlyElementsOf(ids.subList(1, 3));
    assertThat(deliveryIds(api.get(list + "&after=0", Api.ADMIN_KEY).json())).as("0, the start of before")
        .containsExactlyElementsOf(ids.subList(0, 2));
    assertThat(rawCursorsOf("deliveries") - rawBefore).as("each page asked for with a raw id, counted").isEqualTo(2);

    String parkedListCursor = Base64.getUrlEncoder().withoutPadding()
        .encodeToString(("p1:" + ids.get(0)).getBytes(StandardCharsets.US_ASCII));
    List<String> refused = List.of("cursor=abc", "cursor=%21%21", "cursor=" + parkedListCursor,
        "cursor=" + "x".repeat(65), "cursor=-1", "cursor=9999999999999999999", "after=abc",
        "cursor=" + next + "&after=" + next);
    for (String query : refused) {
      Api.Response response = api.get(list + "&" + query, Api.ADMIN_KEY);
      assertThat(response.status()).as(query + ": " + response.body()).isEqualTo(400);
      assertThat(response.code()).as(query).isEqualTo("invalid_cursor");
    }
  }

  private double rawCursorsOf(String list) {
    return new Prometheus(api.get("/metrics", null).body()).sum("ordertimeout_http_raw_cursors_total", "list", list);
  }

  private static List<String> deliveryIds(JsonObject page) {
    return page.getJsonArray("deliveries").stream().map(d -> ((JsonObject) d).getString("id")).toList();
  }

  private JsonArray failed() {
    return api.get("/v1/admin/webhooks/deliveries?status=failed", Api.ADMIN_KEY).json().getJsonArray("deliveries");
  }

  /**
   * The requests at {@code path} about this test's orders {@code ids}: an event of an earlier test class's order, left
   * in the outbox when this class's service started, may still arrive.
   */
  private List<Received> about(String path, List<String> ids) {
    return receiver.received(path).stream().filter(r -> ids.contains(r.orderId())).toList();
  }

  /** The 2xx requests at {@code path} about order {@code id}, in the order they arrived. */
  private List<Received> ofOrder(String path, String id) {
    return receiver.received(path).stream()
        .filter(r -> r.status() / 100 == 2 && r.orderId().equals(id))
        .sorted(Comparator.comparingLong(Received::receivedNanos))
        .toList();
  }

  private static List<String> eventIds(String orderId) {
    List<String> ids = new ArrayList<>();
    Sql.rows("SELECT event_id FROM outbox WHERE order_id = ? ORDER BY event_id", Long.parseLong(orderId))
        .forEach(row -> ids.add(row.get("event_id").toString()));
    return ids;
  }

  /** Standard Webhooks: v1, base64 HMAC-SHA256 of "id.timestamp.body"; the timestamp in unix seconds, recent. */
  private static void assertSigned(Received event, byte[] key) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(key, "HmacSHA256"));
      String expected = "v1," + Base64.getEncoder().encodeToString(
          mac.doFinal((event.id() + "." + event.timestamp() + "." + event.body()).getBytes(StandardCharsets.UTF_8)));
      assertThat(event.signature()).as("signature of event " + event.id()).isEqualTo(expected);
      assertThat(Math.abs(Long.parseLong(event.timestamp()) - Instant.now().getEpochSecond())).isLessThan(300);
    } catch (java.security.GeneralSecurityException e) {
      throw new AssertionError(e);
    }
  }
}
