package ordertimeout.delivery;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import ordertimeout.support.Api;
import ordertimeout.support.Await;
import ordertimeout.support.RawHttp;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * GET /v1/events against the real service on the embedded default (Kafka off, no webhook): pages follow the cursor
 * in commit order without a gap or a repeat, each client sees its own orders' events only (admins all), and a long
 * poll answers as soon as an event arrives, and stops looking once its client left.
 */
class EventFeedTest extends ServiceTestBase {
  private static final String OTHER_KEY = "other-client-key";

  @Override
  protected Map<String, String> overrides() {
    return Map.of("OT_AUTH_KEYS", "[{key: dev-user-key, role: user, client: dev-user}, {key: dev-admin-key, role: admin, client: dev-admin},"
        + " {key: " + OTHER_KEY + ", role: user, client: other}]");
  }

  @Test
  void pagesFollowTheCursorInCommitOrderAndEachClientSeesItsOwn() {
    api.setStock("SKU-1", 1000);
    String start = drain(Api.ADMIN_KEY, "0");
    List<String> mine = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      mine.add(create("u-1", 3600, "SKU-1", 1).getString("id"));
    }
    assertThat(api.pay(mine.get(0)).status()).isEqualTo(200);
    assertThat(api.cancel(mine.get(1)).status()).isEqualTo(200);
    String others = api.as(OTHER_KEY).createOrder("other-1", orderBody("u-9", 3600, "SKU-1", 2)).json().getString("id");
    Await.until("every event in the feed", Duration.ofSeconds(30), () -> events(Api.ADMIN_KEY, start, 1000).size() == 8);

    List<JsonObject> all = events(Api.ADMIN_KEY, start, 1000);
    List<JsonObject> paged = new ArrayList<>();
    String cursor = start;
    while (true) {
      JsonObject page = api.get("/v1/events?after=" + cursor + "&limit=3", Api.USER_KEY).json();
      JsonArray events = page.getJsonArray("events");
      if (events.isEmpty()) {
        assertThat(page.getString("next")).as("an empty page answers the same cursor").isEqualTo(cursor);
        break;
      }
      assertThat(events.size()).isLessThanOrEqualTo(3);
      events.forEach(event -> paged.add((JsonObject) event));
      cursor = page.getString("next");
    }
    assertThat(paged).extracting(e -> e.getString("orderId")).as("dev-user's events only").containsOnlyElementsOf(mine);
    assertThat(paged).extracting(e -> e.getString("id")).as("the admin's feed without the other client's, in the same order")
        .containsExactlyElementsOf(all.stream().filter(e -> !e.getString("orderId").equals(others)).map(e -> e.getString("id")).toList());
    assertThat(new HashSet<>(paged.stream().map(e -> e.getString("id")).toList())).hasSize(7);
    for (String id : List.of(mine.get(0), mine.get(1))) {
      assertThat(paged.stream().filter(e -> e.getString("orderId").equals(id)).map(e -> e.getString("type")).toList().get(0))
          .as("an order's creation before what followed").isEqualTo("ORDER_CREATED");
    }
    JsonObject paid = paged.stream().filter(e -> e.getString("type").equals("ORDER_PAID")).findFirst().orElseThrow();
    assertThat(paid.getString("orderId")).isEqualTo(mine.get(0));
    assertThat(paid.getJsonObject("payload").getString("status")).isEqualTo("PAID");
    assertThat(paid.getJsonObject("payload").getJsonArray("items")).hasSize(1);
    assertThat(paid.getString("at")).isNotBlank();
    assertThat(paid.getString("id")).isEqualTo(Sql.rows("SELECT event_id FROM outbox WHERE type = 'ORDER_PAID'").get(0).get("event_id").toString());

    List<JsonObject> theirs = events(OTHER_KEY, start, 1000);
    assertThat(theirs).extracting(e -> e.getString("orderId")).containsExactly(others);
    assertThat(theirs.get(0).getJsonObject("payload").getString("client")).isEqualTo("other");
  }

  @Test
  void aLongPollAnswersWhenAnEventArrives() {
    api.setStock("SKU-1", 100);
    String cursor = drain(Api.USER_KEY, "0");
    long started = System.nanoTime();
    JsonObject empty = api.get("/v1/events?after=" + cursor + "&wait=1", Api.USER_KEY).json();
    assertThat(empty.getJsonArray("events")).isEmpty();
    assertThat(empty.getString("next")).isEqualTo(cursor);
    assertThat(System.nanoTime() - started).as("held back for the wait").isGreaterThanOrEqualTo(TimeUnit.SECONDS.toNanos(1));

    CompletableFuture<Api.Response> waiting = api.sendAsync(api.request("GET", "/v1/events?after=" + cursor + "&wait=25", Api.USER_KEY, null));
    assertThat(waiting).as("nothing to answer yet").isNotDone();
    String id = create("u-1", 3600, "SKU-1", 1).getString("id");
    Api.Response answered = waiting.orTimeout(30, TimeUnit.SECONDS).join();
    assertThat(answered.status()).isEqualTo(200);
    JsonArray events = answered.json().getJsonArray("events");
    assertThat(events).hasSize(1);
    assertThat(events.getJsonObject(0).getString("orderId")).isEqualTo(id);
    assertThat(events.getJsonObject(0).getString("type")).isEqualTo("ORDER_CREATED");
  }

  @Test
  void aTimedOutOrdersReminderAndCloseCarryTheWholeOrderInTheOrderTheyHappened() {
    api.setStock("SKU-1", 100);
    String start = drain(Api.USER_KEY, "0");
    String id = create("u-3", 3, "SKU-1", 4).getString("id");
    Await.until("the reminder and the timeout close in the feed", Duration.ofSeconds(30),
        () -> events(Api.USER_KEY, start, 1000).size() == 3);
    List<JsonObject> events = events(Api.USER_KEY, start, 1000);
    assertThat(events).extracting(e -> e.getString("type")).containsExactly("ORDER_CREATED", "ORDER_CLOSE_REMINDER", "ORDER_CLOSED");
    JsonObject reminder = events.get(1).getJsonObject("payload");
    assertThat(reminder.getString("orderId")).isEqualTo(id);
    assertThat(reminder.getString("status")).isEqualTo("UNPAID");
    assertThat(reminder.getString("userId")).isEqualTo("u-3");
    assertThat(reminder.getString("client")).isEqualTo("dev-user");
    assertThat(reminder.getString("remindAt")).isNotNull();
    assertThat(reminder.getJsonArray("items")).isEqualTo(new JsonArray().add(new JsonObject().put("sku", "SKU-1").put("qty", 4)));
    JsonObject closed = events.get(2).getJsonObject("payload");
    assertThat(closed.getString("status")).isEqualTo("CLOSED");
    assertThat(closed.getString("reason")).isEqualTo("TIMEOUT");
    assertThat(closed.getString("closeAt")).isEqualTo(reminder.getString("closeAt"));
    assertThat(closed.getString("closedAt")).isNotNull();
    assertThat(closed.containsKey("paidAt")).isFalse();
  }

  /**
   * A long poll looks every 200 ms while it waits; once its client closed the connection, it stops looking. The looks
   * are counted by pg_stat_statements, shared by the whole run: a count read before entries were evicted (it keeps
   * 5,000) says nothing after, and the test is then not conclusive.
   */
  @Test
  void aLongPollStopsLookingOnceItsClientLeft() {
    Sql.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    String cursor = drain(Api.USER_KEY, "0");
    clientFeedLooks(); // the counting statements recorded once before, so that recording them evicts nothing later
    evictions();
    long evictedBefore = evictions();
    try (RawHttp http = RawHttp.connect(service.config().http().port())) {
      long before = clientFeedLooks();
      http.send(RawHttp.request("GET", "/v1/events?after=" + cursor + "&wait=25",
          "Authorization: Bearer " + Api.USER_KEY));
      Await.until("the long poll looking again", Duration.ofSeconds(10),
          () -> clientFeedLooks() >= before + 3 || evictions() != evictedBefore);
    }
    Await.sleep(500); // a look under way when the client left ends
    long afterLeaving = clientFeedLooks();
    Await.sleep(1_000);
    long lookedSinceLeaving = clientFeedLooks() - afterLeaving;
    assumeTrue(evictions() == evictedBefore, "pg_stat_statements evicted entries while this test counted");
    assertThat(lookedSinceLeaving).as("looks at the feed in the second after its client left").isZero();
  }

  /** How many times pg_stat_statements has evicted entries to make room. */
  private static long evictions() {
    return Sql.count("SELECT dealloc FROM pg_stat_statements_info");
  }

  /** Every look of a user key's feed at the database so far (pg_stat_statements, which the test database preloads). */
  private static long clientFeedLooks() {
    return Sql.count("SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE query LIKE '%WHERE f.client = $3%'");
  }

  @Test
  void badCursorsLimitsAndWaitsAnswer400() {
    // The feed's cursor is a position, a number its reader keeps: anything else, another list's opaque cursor too.
    for (String cursor : List.of("abc", "-1", "1.5", "%21%21", "cDE6NDI", "9999999999999999999", "x".repeat(65))) {
      Api.Response response = api.get("/v1/events?after=" + cursor, Api.USER_KEY);
      assertThat(response.status()).as(cursor + ": " + response.body()).isEqualTo(400);
      assertThat(response.code()).as(cursor).isEqualTo("invalid_cursor");
    }
    // A cursor past the last position given (another database's, a typo) would skip every event up to it unseen.
    long last = Sql.count("SELECT last_position FROM outbox_positions");
    assertThat(api.get("/v1/events?after=" + (last + 1_000_000), Api.USER_KEY).code()).isEqualTo("invalid_cursor");
    assertThat(api.get("/v1/events?after=" + last, Api.USER_KEY).status()).as("the last position, a cursor")
        .isEqualTo(200);
    assertThat(api.get("/v1/events?limit=0", Api.USER_KEY).code()).isEqualTo("invalid_field");
    assertThat(api.get("/v1/events?limit=1001", Api.USER_KEY).code()).isEqualTo("invalid_field");
    assertThat(api.get("/v1/events?wait=31", Api.USER_KEY).code()).isEqualTo("invalid_field");
    assertThat(api.get("/v1/events", null).status()).isEqualTo(401);
  }

  /** Reads the feed to its end; the cursor after the last event. */
  private String drain(String key, String from) {
    String cursor = from;
    Set<String> seen = new HashSet<>();
    while (true) {
      JsonObject page = api.get("/v1/events?after=" + cursor + "&limit=1000", key).json();
      if (page.getJsonArray("events").isEmpty()) {
        return cursor;
      }
      page.getJsonArray("events").forEach(e -> assertThat(seen.add(((JsonObject) e).getString("id"))).isTrue());
      cursor = page.getString("next");
    }
  }

  private List<JsonObject> events(String key, String after, int limit) {
    List<JsonObject> events = new ArrayList<>();
    api.get("/v1/events?after=" + after + "&limit=" + limit, key).json().getJsonArray("events").forEach(e -> events.add((JsonObject) e));
    return events;
  }
}
