package ordertimeout.metrics;

import io.vertx.core.json.JsonObject;
import ordertimeout.support.Api;
import ordertimeout.support.Await;
import ordertimeout.support.Metrics;
import ordertimeout.support.Prometheus;
import ordertimeout.support.ServiceTestBase;
import ordertimeout.support.Sql;
import org.junit.jupiter.api.Test;

import java.sql.Timestamp;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/** GET /metrics against the real service: the meters are there, in the Prometheus text format, and count what happened. */
class MetricsTest extends ServiceTestBase {
  private static final String GREEDY_KEY = "greedy-user-key";

  @Override
  protected Map<String, String> overrides() {
    return Map.of(
        "OT_METRICS_OUTBOX_REFRESH_SECONDS", "1",
        "OT_CLIENTS_DEFAULT_CREATES_PER_SECOND", "1",
        "OT_CLIENTS_DEFAULT_CREATES_BURST", "20",
        "OT_AUTH_KEYS", "[{key: dev-user-key, role: user, client: dev-user}, {key: dev-admin-key, role: admin, client: dev-admin},"
            + " {key: " + GREEDY_KEY + ", role: user, client: greedy}]");
  }

  private Prometheus scrape() {
    Api.Response response = api.get("/metrics", null);
    assertThat(response.status()).isEqualTo(200);
    assertThat(response.contentType()).startsWith("text/plain");
    return new Prometheus(response.body());
  }

  @Test
  void aTimeoutCloseShowsInTheLatenessHistogramItsPercentilesAndTheClosesByReasonAndPath() {
    Prometheus before = scrape();
    api.setStock("SKU-1", 10);
    String id = create("u-1", 1, "SKU-1", 1).getString("id");
    Await.until("the timeout close", Duration.ofSeconds(30), () -> statusOf(id).equals("CLOSED"));
    // The lateness as the close recorded it: both times from the database, each in whole milliseconds.
    var times = Sql.rows("SELECT close_at, closed_at FROM orders WHERE id = ?", Long.parseLong(id)).get(0);
    double lateness = (((Timestamp) times.get("closed_at")).toInstant().toEpochMilli()
        - ((Timestamp) times.get("close_at")).toInstant().toEpochMilli()) / 1000.0;

    Prometheus after = scrape();
    assertThat(Metrics.sum(after, "ordertimeout_close_lateness_seconds_count") - before.sum("ordertimeout_close_lateness_seconds_count"))
        .isGreaterThanOrEqualTo(1);
    assertThat(Metrics.sum(after, "ordertimeout_close_lateness_seconds_bucket", "le", "+Inf"))
        .isEqualTo(Metrics.sum(after, "ordertimeout_close_lateness_seconds_count"));
    assertThat(after.samples("ordertimeout_close_lateness_seconds_bucket")).hasSizeGreaterThan(10);
    assertThat(Metrics.sum(after, "ordertimeout_close_lateness_seconds_max")).as("the max over the window, this close in it")
        .isGreaterThanOrEqualTo(lateness);
    for (String quantile : new String[] {"0.5", "0.99", "0.999"}) {
      assertThat(Metrics.sum(after, "ordertimeout_close_lateness_percentile_seconds", "quantile", quantile)).as(quantile)
          .isGreaterThanOrEqualTo(0);
    }
    // The only timeout close of the class: the high percentiles of the window are its lateness (2 significant digits).
    assertThat(Metrics.sum(after, "ordertimeout_close_lateness_percentile_seconds", "quantile", "0.99"))
        .as("p99 with this close in the window").isCloseTo(lateness, within(lateness * 0.02 + 0.001));
    assertThat(Metrics.sum(after, "ordertimeout_closes_total", "reason", "TIMEOUT") - before.sum("ordertimeout_closes_total", "reason", "TIMEOUT"))
        .isGreaterThanOrEqualTo(1);
    assertThat(after.has("ordertimeout_closes_total", "reason", "TIMEOUT", "path", "wheel")).isTrue();
    assertThat(after.has("ordertimeout_closes_total", "reason", "TIMEOUT", "path", "sweep")).isTrue();
    assertThat(after.has("ordertimeout_sweep_catches_total")).isTrue();

    JsonObject stats = api.stats();
    assertThat(stats.getJsonObject("closesByReason").getLong("TIMEOUT"))
        .as("the admin stats and /metrics count the same closes")
        .isEqualTo((long) Metrics.sum(after, "ordertimeout_closes_total", "reason", "TIMEOUT"));
    assertThat(stats.getJsonObject("timeoutClosesByPath").getLong("sweep"))
        .isEqualTo((long) Metrics.sum(after, "ordertimeout_sweep_catches_total"));
    assertThat(stats.getJsonObject("latenessMillis").getLong("count"))
        .isEqualTo((long) Metrics.sum(after, "ordertimeout_close_lateness_seconds_count"));
  }

  @Test
  void createsReplaysRateLimitsCancelsAndGroupWaitsAreCounted() {
    api.setStock("SKU-1", 1000);
    Prometheus before = scrape();
    String key = UUID.randomUUID().toString();
    Api.Response first = api.createOrder(key, orderBody("u-1", 600, "SKU-1", 1));
    Api.Response replay = api.createOrder(key, orderBody("u-1", 600, "SKU-1", 1));
    assertThat(first.status()).isEqualTo(201);
    assertThat(replay.body()).isEqualTo(first.body());
    assertThat(api.cancel(first.json().getString("id")).status()).isEqualTo(200);
    Api greedy = api.as(GREEDY_KEY);
    int limited = 0;
    for (int i = 0; i < 60 && limited == 0; i++) {
      if (greedy.createOrder("greedy-" + i, orderBody("g-" + i, 600, "SKU-1", 1)).status() == 429) {
        limited++;
      }
    }
    assertThat(limited).as("the greedy client's bucket ran dry").isEqualTo(1);

    // A create's latency is recorded once its response is written, which can be a moment after the client read it.
    Await.until("the last create's latency to be recorded", Duration.ofSeconds(5),
        () -> scrape().sum("ordertimeout_order_create_seconds_count", "status", "429") - before.sum(
            "ordertimeout_order_create_seconds_count", "status", "429") >= 1);
    Prometheus after = scrape();
    assertThat(delta(before, after, "ordertimeout_created_orders_total")).isGreaterThanOrEqualTo(1);
    assertThat(delta(before, after, "ordertimeout_idempotent_replays_total")).isEqualTo(1);
    assertThat(delta(before, after, "ordertimeout_rate_limited_total")).isEqualTo(1);
    assertThat(delta(before, after, "ordertimeout_closes_total", "reason", "USER_CANCELLED", "path", "request")).isEqualTo(1);
    assertThat(delta(before, after, "ordertimeout_order_create_seconds_count", "status", "201"))
        .as("the first create, its replay and the greedy client's").isGreaterThanOrEqualTo(3);
    assertThat(delta(before, after, "ordertimeout_order_create_seconds_count", "status", "429")).isEqualTo(1);
    assertThat(Metrics.sum(after, "ordertimeout_order_create_seconds_bucket", "status", "201", "le", "+Inf"))
        .isEqualTo(Metrics.sum(after, "ordertimeout_order_create_seconds_count", "status", "201"));
    assertThat(delta(before, after, "ordertimeout_intake_group_wait_seconds_count", "kind", "create"))
        .as("each create that reached the group commit, its wait for its group").isGreaterThanOrEqualTo(3);
    assertThat(delta(before, after, "ordertimeout_intake_group_transaction_seconds_count", "kind", "create"))
        .as("the create groups' transactions").isGreaterThanOrEqualTo(1);
    assertThat(Metrics.sum(after, "ordertimeout_intake_group_wait_seconds_bucket", "kind", "create", "le", "+Inf"))
        .isEqualTo(Metrics.sum(after, "ordertimeout_intake_group_wait_seconds_count", "kind", "create"));
    assertThat(api.stats().getLong("idempotentReplays")).isEqualTo((long) Metrics.sum(after, "ordertimeout_idempotent_replays_total"));
  }

  @Test
  void pendingTimersPerShardAndTheOutboxBacklogFollowTheDatabase() {
    api.setStock("SKU-1", 10);
    // A reading from before this test's empty tables could match the two rows below (random method order).
    Await.until("the outbox gauge to read the emptied outbox", Duration.ofSeconds(30),
        () -> Metrics.sum(scrape(), "ordertimeout_outbox_backlog") == 0);
    double pendingBefore = Metrics.sum(scrape(), "ordertimeout_pending_timers");
    create("u-1", 600, "SKU-1", 1);
    create("u-2", 600, "SKU-1", 1);
    Prometheus scraped = scrape();
    assertThat(scraped.samples("ordertimeout_pending_timers")).as("one series per shard").hasSize(64);
    assertThat(Metrics.sum(scraped, "ordertimeout_pending_timers") - pendingBefore).as("deadline and reminder of both orders").isEqualTo(4);
    assertThat(Metrics.sum(scraped, "ordertimeout_pending_timers"))
        .isEqualTo(api.stats().getJsonObject("pendingTimers").getLong("total").doubleValue());

    long unpublished = Sql.count("SELECT count(*) FROM outbox o WHERE " + Sql.unpublished("o"));
    assertThat(unpublished).as("ORDER_CREATED events, no relay publishes them yet").isEqualTo(2);
    Await.until("the outbox gauge to be read again", Duration.ofSeconds(30),
        () -> Metrics.sum(scrape(), "ordertimeout_outbox_backlog") == unpublished);
    double oldestAge = Metrics.sum(scrape(), "ordertimeout_outbox_oldest_age_seconds");
    double oldestAgeNow = Sql.rows("SELECT extract(epoch FROM now() - min(created_at))::float8 AS age FROM outbox o WHERE " + Sql.unpublished("o"))
        .get(0).values().stream().mapToDouble(age -> ((Number) age).doubleValue()).sum();
    assertThat(oldestAge).as("the age of the oldest unpublished event, as last read").isPositive().isLessThanOrEqualTo(oldestAgeNow);
  }

  @Test
  void theJvmVertxPoolsHttpServerAndNodeStateAreServedToo() {
    api.stats();
    Prometheus scraped = scrape();
    assertThat(scraped.has("jvm_memory_used_bytes", "area", "heap")).isTrue();
    assertThat(scraped.has("jvm_threads_live_threads")).isTrue();
    assertThat(scraped.has("jvm_gc_memory_allocated_bytes_total")).isTrue();
    assertThat(scraped.has("process_cpu_usage")).isTrue();
    for (String pool : new String[] {"order-timeout-intake", "order-timeout-deadlines", "order-timeout-ops"}) {
      assertThat(scraped.has("vertx_pool_in_use", "pool_type", "sql", "pool_name", pool)).as(pool).isTrue();
    }
    assertThat(scraped.has("vertx_pool_in_use", "pool_type", "worker")).isTrue();
    assertThat(Metrics.sum(scraped, "vertx_eventbus_handlers", "address", "close.due")).isEqualTo(1);
    assertThat(scraped.samples("vertx_eventbus_handlers")).allSatisfy(sample ->
        assertThat(sample.labels().get("address")).as("no reply addresses").doesNotStartWith("__vertx"));
    assertThat(Metrics.sum(scraped, "ordertimeout_wheel_loaded")).isEqualTo(1);
    assertThat(Metrics.sum(scraped, "ordertimeout_wheel_reload_seconds_count")).isEqualTo(1);
    assertThat(Metrics.sum(scraped, "ordertimeout_draining")).isZero();
    for (Alarms.Code code : Alarms.Code.values()) {
      assertThat(scraped.has("ordertimeout_alarm", "code", code.name())).as(code.name()).isTrue();
    }
    for (String counter : new String[] {"ordertimeout_close_retries_total", "ordertimeout_close_batches_given_up_total",
        "ordertimeout_reminders_sent_total"}) {
      assertThat(scraped.has(counter)).as(counter).isTrue();
    }
  }

  @Test
  void everyAnsweredRequestIsTimedByTheRouteThatAnsweredItItsMethodAndItsCode() {
    String requests = "ordertimeout_http_requests_seconds_count";
    String seconds = "ordertimeout_http_requests_seconds_sum";
    api.setStock("SKU-METRICS-HTTP", 10);
    Prometheus before = scrape();
    String id = api.createOrders(1, 600, "SKU-METRICS-HTTP").get(0);
    assertThat(api.order(id).status()).isEqualTo(200);
    assertThat(api.order(id).status()).isEqualTo(200);
    assertThat(api.order("1").status()).isEqualTo(404);
    assertThat(api.get("/v1/orders/" + id, null).status()).isEqualTo(401);
    assertThat(api.get("/no/such/resource", null).status()).isEqualTo(404);
    assertThat(api.send(api.request("BREW", "/v1/orders/" + id, "dev-user-key", null)).status()).isEqualTo(405);
    Prometheus after = scrape();

    assertThat(delta(before, after, requests, "route", "/v1/orders", "method", "POST", "code", "201")).isEqualTo(1);
    assertThat(delta(before, after, requests, "route", "/v1/orders/:id", "method", "GET", "code", "200")).isEqualTo(2);
    assertThat(delta(before, after, requests, "route", "/v1/orders/:id", "method", "GET", "code", "404"))
        .as("an order that is not there: answered by its route").isEqualTo(1);
    assertThat(delta(before, after, requests, "route", "/v1/", "method", "GET", "code", "401"))
        .as("refused by the last route it reached, the API key's").isEqualTo(1);
    assertThat(delta(before, after, requests, "route", "", "method", "GET", "code", "404")).as("no route").isEqualTo(1);
    assertThat(delta(before, after, requests, "method", "other", "code", "405"))
        .as("a method HTTP does not name: one series for all of them").isEqualTo(1);
    assertThat(after.samples(requests)).noneSatisfy(sample ->
        assertThat(sample.labels().get("method")).isEqualTo("BREW"));
    assertThat(after.samples(requests)).noneSatisfy(sample ->
        assertThat(sample.labels().get("route")).contains(id));
    assertThat(delta(before, after, seconds, "route", "/v1/orders/:id", "method", "GET", "code", "200"))
        .as("how long the two reads took").isPositive();
    assertThat(after.has("vertx_http_server_requests_total")).as("Vert.x's own HTTP server metrics are off").isFalse();
  }

  /** How much {@code name} grew: it must be there after; before, a labelled series not counted yet is 0. */
  private static double delta(Prometheus before, Prometheus after, String name, String... labels) {
    return Metrics.sum(after, name, labels) - before.sum(name, labels);
  }
}
