package ordertimeout.bench;

import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import ordertimeout.Service;
import ordertimeout.config.AppConfig;
import org.HdrHistogram.Histogram;

import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * What an operator meets on a large table: the search ({@code GET /v1/admin/orders}) of each common filter, first page
 * and the page after it, and a bulk close job's rate, on the embedded default with many orders seeded by SQL.
 *
 * <p>Seeded: {@code orders} orders (10,000,000) of 20 clients, 1,000,000 users and 2,000 SKUs, one item each, created over
 * the last 30 days; 5% unpaid with deadlines 1 to 7 days ahead (the timer loads them on start), the rest paid or
 * closed; then ANALYZE. Each filter is searched {@code queries} times (50) one after another, as one operator does,
 * and its latency p50, p99 and max printed. Then one bulk close of the unpaid orders due in 12 hours two days ahead (about
 * 41,000 of 10,000,000), timed from submission to the job's end: closes per second, with {@code bulkJobs.batchSize} and
 * {@code batchPauseMillis} as configured, and the stock invariant checked after it.
 *
 * <p>Arguments: orders (10000000), queries per filter (50).
 */
public final class OperatorBenchmark {
  private static final String ADMIN_KEY = "dev-admin-key";
  private static final int SEED_CHUNK = 1_000_000;
  private static final int BULK_HOURS = 12;

  private OperatorBenchmark() {}

  public static void main(String[] args) throws Exception {
    int orders = args.length > 0 ? Integer.parseInt(args[0]) : 10_000_000;
    int queries = args.length > 1 ? Integer.parseInt(args[1]) : 50;
    try (BenchDatabase db = BenchDatabase.fresh("bench-db-operator")) {
      run(db, orders, queries);
    }
    System.exit(0);
  }

  private static void run(BenchDatabase db, int orders, int queries) throws Exception {
    Instant now = Instant.now().truncatedTo(ChronoUnit.SECONDS);
    long seedStarted = System.nanoTime();
    seed(db, orders, now);
    double seedSeconds = (System.nanoTime() - seedStarted) / 1e9;
    System.out.printf("operator: seeded %d orders in %.0f s%n", orders, seedSeconds);

    int port = Results.freePort();
    AppConfig config = Results.serviceConfig(Map.of("OT_HTTP_PORT", Integer.toString(port)));
    Vertx vertx = Vertx.vertx(Service.vertxOptions());
    long startStarted = System.nanoTime();
    Service service = Service.start(vertx, config, db.setup.connectOptions()).toCompletionStage().toCompletableFuture()
        .get(10, TimeUnit.MINUTES);
    double startSeconds = (System.nanoTime() - startStarted) / 1e9;
    HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    String base = "http://127.0.0.1:" + port;
    JsonObject searches = new JsonObject();
    JsonObject bulk;
    try {
      for (Map.Entry<String, String> filter : filters(now).entrySet()) {
        searches.put(filter.getKey(), searchLatency(http, base, filter.getValue(), queries));
      }
      bulk = bulkClose(http, base, db, now);
    } finally {
      service.stop().toCompletionStage().toCompletableFuture().get(1, TimeUnit.MINUTES);
      vertx.close();
    }
    JsonObject result = Results.header("operator")
        .put("orders", orders)
        .put("queriesPerFilter", queries)
        .put("seedSeconds", Results.round(seedSeconds))
        .put("serviceStartSeconds", Results.round(startSeconds))
        .put("search", searches)
        .put("bulkClose", bulk);
    Results.write("operator", result);
    System.out.printf("operator: %d orders; service started (timer reload included) in %.1f s%n", orders, startSeconds);
    searches.forEach(entry -> {
      JsonObject figures = (JsonObject) entry.getValue();
      System.out.printf("operator: search %-32s first page p50 %6.1f ms, p99 %6.1f ms, max %6.1f ms; next page p50 %6.1f ms, "
              + "p99 %6.1f ms (%d rows a page)%n", entry.getKey(), figures.getDouble("firstP50Ms"), figures.getDouble("firstP99Ms"),
          figures.getDouble("firstMaxMs"), figures.getDouble("nextP50Ms"), figures.getDouble("nextP99Ms"), figures.getInteger("rows"));
    });
    System.out.printf("operator: bulk close of %d unpaid orders (those due in %d hours) took %.1f s: %d closes/s (job %s, "
            + "stock %s)%n", bulk.getLong("changed"), BULK_HOURS, bulk.getDouble("seconds"), bulk.getLong("closesPerSecond"),
        bulk.getString("status"), bulk.getLong("stockInvariantBroken") == 0 ? "consistent" : "BROKEN");
  }

  /** The common filters of the operators' search, by name: the query string of each. */
  private static Map<String, String> filters(Instant now) {
    Map<String, String> filters = new LinkedHashMap<>();
    filters.put("unpaid due in the next hour", "status=UNPAID&dueAfter=" + iso(now.plus(1, ChronoUnit.DAYS))
        + "&dueBefore=" + iso(now.plus(1, ChronoUnit.DAYS).plus(1, ChronoUnit.HOURS)));
    filters.put("unpaid", "status=UNPAID");
    filters.put("a client's user", "client=client-7&userId=user-4207");
    filters.put("a client", "client=client-7");
    filters.put("a SKU's unpaid orders", "sku=SKU-40&status=UNPAID");
    filters.put("a SKU", "sku=SKU-42");
    filters.put("created in one hour a week ago", "createdAfter=" + iso(now.minus(7, ChronoUnit.DAYS))
        + "&createdBefore=" + iso(now.minus(7, ChronoUnit.DAYS).plus(1, ChronoUnit.HOURS)));
    filters.put("no filter", "");
    return filters;
  }

  private static void seed(BenchDatabase db, int orders, Instant now) {
    long createdOverSeconds = 30L * 24 * 3600;
    for (int from = 1; from <= orders; from += SEED_CHUNK) {
      int to = Math.min(orders, from + SEED_CHUNK - 1);
      // every 20th order unpaid, its deadline 1 to 7 days ahead; the others paid or closed, in creation order of their ids
      db.execute("""
          INSERT INTO orders (id, shard, client, user_id, category, status, close_reason, created_at, close_at, paid_at, closed_at)
          SELECT n, n % 64, 'client-' || (n % 20), 'user-' || (n % 1000000), 'physical',
                 CASE WHEN n % 20 = 0 THEN 'UNPAID' WHEN n % 2 = 0 THEN 'PAID' ELSE 'CLOSED' END,
                 CASE WHEN n % 20 <> 0 AND n % 2 = 1 THEN 'TIMEOUT' END,
                 created, CASE WHEN n % 20 = 0 THEN ?::timestamptz + interval '1 day' + (n % 518400) * interval '1 second'
                               ELSE created + interval '30 minutes' END,
                 CASE WHEN n % 20 <> 0 AND n % 2 = 0 THEN created + interval '5 minutes' END,
                 CASE WHEN n % 20 <> 0 AND n % 2 = 1 THEN created + interval '30 minutes' END
          FROM generate_series(?::bigint, ?::bigint) AS n,
               LATERAL (SELECT ?::timestamptz - (?::bigint - n * ?::bigint / ?::bigint) * interval '1 second' AS created) c""",
          now.toString(), from, to, now.toString(), createdOverSeconds, createdOverSeconds, orders);
      db.execute("INSERT INTO order_items (order_id, sku, qty) SELECT n, 'SKU-' || (n % 2000), 1 FROM generate_series(?::bigint, ?::bigint) AS n",
          from, to);
    }
    db.executeScript(
        """
        INSERT INTO inventory (sku, available, reserved)
        SELECT 'SKU-' || s, 1000000, coalesce((SELECT sum(i.qty) FROM order_items i JOIN orders o ON o.id = i.order_id
                                               WHERE i.sku = 'SKU-' || s AND o.status = 'UNPAID'), 0)
        FROM generate_series(0, 1999) AS s""",
        "ANALYZE orders", "ANALYZE order_items", "ANALYZE inventory");
  }

  /** {@code queries} searches of the filter's first page, and as many of the page after it, one after another. */
  private static JsonObject searchLatency(HttpClient http, String base, String query, int queries) throws Exception {
    Histogram first = new Histogram(3_600_000_000L, 3);
    Histogram next = new Histogram(3_600_000_000L, 3);
    int rows = 0;
    for (int i = 0; i < queries; i++) {
      long started = System.nanoTime();
      JsonObject page = get(http, base + "/v1/admin/orders?" + query);
      first.recordValue((System.nanoTime() - started) / 1000);
      rows = page.getJsonArray("orders", new JsonArray()).size();
      String cursor = page.getString("next");
      if (cursor != null) {
        started = System.nanoTime();
        get(http, base + "/v1/admin/orders?" + (query.isEmpty() ? "" : query + "&") + "cursor="
            + URLEncoder.encode(cursor, StandardCharsets.UTF_8));
        next.recordValue((System.nanoTime() - started) / 1000);
      }
    }
    return new JsonObject()
        .put("query", query)
        .put("rows", rows)
        .put("firstP50Ms", OpenLoad.Result.ms(first.getValueAtPercentile(50)))
        .put("firstP99Ms", OpenLoad.Result.ms(first.getValueAtPercentile(99)))
        .put("firstMaxMs", OpenLoad.Result.ms(first.getMaxValue()))
        .put("nextP50Ms", OpenLoad.Result.ms(next.getValueAtPercentile(50)))
        .put("nextP99Ms", OpenLoad.Result.ms(next.getValueAtPercentile(99)));
  }

  /** One bulk close of the unpaid orders due in {@link #BULK_HOURS} hours two days ahead, from submission to the job's end. */
  private static JsonObject bulkClose(HttpClient http, String base, BenchDatabase db, Instant now) throws Exception {
    Instant from = now.plus(2, ChronoUnit.DAYS);
    JsonObject filter = new JsonObject().put("status", "UNPAID").put("dueAfter", from.toString())
        .put("dueBefore", from.plus(BULK_HOURS, ChronoUnit.HOURS).toString());
    long started = System.nanoTime();
    JsonObject job = post(http, base + "/v1/admin/orders/bulk-close", new JsonObject().put("filter", filter));
    String id = job.getString("id");
    while (!"SUCCEEDED".equals(job.getString("status")) && !"FAILED".equals(job.getString("status"))) {
      Thread.sleep(20);
      job = get(http, base + "/v1/admin/jobs/" + id);
    }
    double seconds = (System.nanoTime() - started) / 1e9;
    return new JsonObject()
        .put("filter", filter)
        .put("changed", job.getLong("changed"))
        .put("seconds", Results.round(seconds))
        .put("closesPerSecond", Math.round(job.getLong("changed") / seconds))
        .put("status", job.getString("status"))
        .put("stockInvariantBroken", db.stockInvariantViolations());
  }

  private static JsonObject get(HttpClient http, String url) throws Exception {
    return send(http, HttpRequest.newBuilder(URI.create(url)).GET());
  }

  private static JsonObject post(HttpClient http, String url, JsonObject body) throws Exception {
    return send(http, HttpRequest.newBuilder(URI.create(url)).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body.encode())));
  }

  private static JsonObject send(HttpClient http, HttpRequest.Builder request) throws Exception {
    HttpResponse<String> response = http.send(request.header("Authorization", "Bearer " + ADMIN_KEY)
        .timeout(Duration.ofSeconds(60)).build(), HttpResponse.BodyHandlers.ofString());
    if (response.statusCode() >= 300) {
      throw new IllegalStateException(request.build().uri() + " answered " + response.statusCode() + ": " + response.body());
    }
    return new JsonObject(response.body());
  }

  private static String iso(Instant instant) {
    return URLEncoder.encode(instant.toString(), StandardCharsets.UTF_8);
  }
}
