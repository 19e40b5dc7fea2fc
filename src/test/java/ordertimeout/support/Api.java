package ordertimeout.support;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** A blocking (or async) HTTP client for the service's API, as a shop's backend would call it. */
public final class Api {
  /**
   * How often a create answered 503 is sent again before it counts as failed. The retries come Retry-After apart, and
   * a SKU found held by a stalled transaction is refused at once for intake.lockedSkuMillis (3 s by default).
   */
  private static final int UNSERVED_RETRIES = 10;

  public static final String USER_KEY = "dev-user-key";
  public static final String ADMIN_KEY = "dev-admin-key";

  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
  private final String base;
  private final String userKey;

  public Api(int port) {
    this("http://127.0.0.1:" + port, USER_KEY);
  }

  private Api(String base, String userKey) {
    this.base = base;
    this.userKey = userKey;
  }

  /** The same API called with another user key (another client). */
  public Api as(String otherUserKey) {
    return new Api(base, otherUserKey);
  }

  public record Response(int status, String body, HttpResponse<String> raw) {
    public JsonObject json() {
      return new JsonObject(body);
    }

    public String code() {
      return json().getString("code");
    }

    public String contentType() {
      return raw.headers().firstValue("Content-Type").orElse("");
    }

    public JsonArray jsonArray() {
      return new JsonArray(body);
    }

    public String etag() {
      return raw.headers().firstValue("ETag").orElse(null);
    }
  }

  public Response createOrder(String idempotencyKey, JsonObject body) {
    return send(request("POST", "/v1/orders", userKey, body.encode()).header("Idempotency-Key", idempotencyKey));
  }

  public CompletableFuture<Response> createOrderAsync(String idempotencyKey, JsonObject body) {
    return sendAsync(request("POST", "/v1/orders", userKey, body.encode()).header("Idempotency-Key", idempotencyKey));
  }

  /**
   * Creates {@code count} orders of one unit of {@code sku} each (40 users, fresh idempotency keys), 50
   * requests in flight at a time; returns their ids, failing unless every one answers 201. A create answered 503
   * (not served, nothing stored: {@code overloaded} or {@code row_locked} on a loaded machine) is sent again with its
   * key after its Retry-After, as a client would, up to {@value #UNSERVED_RETRIES} times.
   */
  public List<String> createOrders(int count, int timeoutSeconds, String sku) {
    List<String> ids = new ArrayList<>();
    for (int chunk = 0; chunk < count; chunk += 50) {
      List<CompletableFuture<Response>> creates = new ArrayList<>();
      List<String> keys = new ArrayList<>();
      List<JsonObject> bodies = new ArrayList<>();
      for (int i = chunk; i < Math.min(count, chunk + 50); i++) {
        JsonObject body = new JsonObject().put("userId", "u-" + (i % 40)).put("timeoutSeconds", timeoutSeconds)
            .put("items", new JsonArray().add(new JsonObject().put("sku", sku).put("qty", 1)));
        String key = UUID.randomUUID().toString();
        keys.add(key);
        bodies.add(body);
        creates.add(createOrderAsync(key, body));
      }
      for (int c = 0; c < creates.size(); c++) {
        Response response = creates.get(c).join();
        for (int retry = 0; retry < UNSERVED_RETRIES && response.status() == 503; retry++) {
          sleepRetryAfter(response);
          response = createOrder(keys.get(c), bodies.get(c));
        }
        if (response.status() != 201) {
          throw new AssertionError("create answered " + response.status() + ": " + response.body());
        }
        ids.add(response.json().getString("id"));
      }
    }
    return ids;
  }

  private static void sleepRetryAfter(Response unserved) {
    long seconds = unserved.raw().headers().firstValue("Retry-After").map(Long::parseLong).orElse(1L);
    try {
      Thread.sleep(Duration.ofSeconds(seconds).toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted while waiting to send a create again", e);
    }
  }

  public Response get(String path, String key) {
    return send(request("GET", path, key, null));
  }

  public Response post(String path, String key) {
    return send(request("POST", path, key, null));
  }

  public CompletableFuture<Response> postAsync(String path, String key) {
    return sendAsync(request("POST", path, key, null));
  }

  public Response put(String path, String key, String body) {
    return send(request("PUT", path, key, body));
  }

  public Response order(String id) {
    return get("/v1/orders/" + id, userKey);
  }

  public Response pay(String id) {
    return post("/v1/orders/" + id + "/pay", userKey);
  }

  public Response paymentStarted(String id) {
    return post("/v1/orders/" + id + "/payment-started", userKey);
  }

  public Response extend(String id, JsonObject body) {
    return extend(id, body, userKey);
  }

  public Response extend(String id, JsonObject body, String key) {
    return send(request("POST", "/v1/orders/" + id + "/extend", key, body.encode()));
  }

  public Response cancel(String id) {
    return post("/v1/orders/" + id + "/cancel", userKey);
  }

  public Response adminClose(String id) {
    return post("/v1/admin/orders/" + id + "/close", ADMIN_KEY);
  }

  public JsonObject stock(String sku) {
    return get("/v1/admin/inventory/" + sku, ADMIN_KEY).json();
  }

  /**
   * Sets a SKU's available units as an admin should: with the version of a fresh read in If-Match (none for a new SKU),
   * read again and retried when orders changed the row in between.
   */
  public void setStock(String sku, long available) {
    String path = "/v1/admin/inventory/" + sku;
    String body = new JsonObject().put("available", available).encode();
    for (int attempt = 0; attempt < 20; attempt++) {
      Response read = get(path, ADMIN_KEY);
      HttpRequest.Builder set = request("PUT", path, ADMIN_KEY, body);
      if (read.status() == 200) {
        set.header("If-Match", read.etag());
      }
      Response response = send(set);
      if (response.status() == 200) {
        return;
      }
      if (response.status() != 412 && response.status() != 428) {
        throw new IllegalStateException("setting stock failed: " + response.body());
      }
    }
    throw new IllegalStateException("the stock of " + sku + " changed under each of 20 attempts to set it");
  }

  /** {@code POST /v1/admin/inventory/{sku}/adjust} with {@code {"delta": delta}} and the key. */
  public Response adjustStock(String sku, long delta, String idempotencyKey) {
    return send(adjustRequest(sku, delta, idempotencyKey));
  }

  public CompletableFuture<Response> adjustStockAsync(String sku, long delta, String idempotencyKey) {
    return sendAsync(adjustRequest(sku, delta, idempotencyKey));
  }

  private HttpRequest.Builder adjustRequest(String sku, long delta, String idempotencyKey) {
    return request("POST", "/v1/admin/inventory/" + sku + "/adjust", ADMIN_KEY, new JsonObject().put("delta", delta).encode())
        .header("Idempotency-Key", idempotencyKey);
  }

  public JsonObject stats() {
    return get("/v1/admin/stats", ADMIN_KEY).json();
  }

  public HttpRequest.Builder request(String method, String path, String key, String body) {
    HttpRequest.Builder builder = HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(30));
    if (key != null) {
      builder.header("Authorization", "Bearer " + key);
    }
    if (body != null) {
      builder.header("Content-Type", "application/json");
    }
    return builder.method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
  }

  /**
   * Sends and waits at most 40 s, past the request's own 30 s timeout, so that a request the client never ends
   * fails its test instead of hanging the build.
   */
  public Response send(HttpRequest.Builder request) {
    HttpRequest built = request.build();
    StockLedger.Write stockWrite = StockLedger.before(built);
    try {
      HttpResponse<String> response = http.sendAsync(built, HttpResponse.BodyHandlers.ofString()).get(40, TimeUnit.SECONDS);
      StockLedger.after(stockWrite, response.statusCode(), response.body());
      return new Response(response.statusCode(), response.body(), response);
    } catch (TimeoutException e) {
      throw new IllegalStateException("no answer to " + built.method() + " " + built.uri() + " within 40 s", e);
    } catch (ExecutionException e) {
      throw e.getCause() instanceof IOException io ? new java.io.UncheckedIOException(io) : new IllegalStateException(e.getCause());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  public CompletableFuture<Response> sendAsync(HttpRequest.Builder request) {
    HttpRequest built = request.build();
    StockLedger.Write stockWrite = StockLedger.before(built);
    return http.sendAsync(built, HttpResponse.BodyHandlers.ofString())
        .thenApply(response -> {
          StockLedger.after(stockWrite, response.statusCode(), response.body());
          return new Response(response.statusCode(), response.body(), response);
        });
  }
}
