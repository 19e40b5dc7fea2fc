package ordertimeout.http;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.StaticHandler;
import ordertimeout.store.OrderStore;

import java.time.Instant;
import java.util.List;
import java.util.regex.Pattern;

/**
 * The operator dashboard: the static page at /dashboard/ (no key: the page asks for the admin key and
 * sends it with its API calls), and the two admin reads it needs besides the stats and /metrics:
 * GET /v1/admin/closes?limit=n and GET /v1/admin/orders/{id}/log.
 */
final class DashboardRoutes {
  static final int DEFAULT_LIMIT = 20;
  static final int MAX_LIMIT = 200;
  private static final Pattern LIMIT = Pattern.compile("[0-9]{1,4}");

  private final OrderStore store;

  DashboardRoutes(OrderStore store) {
    this.store = store;
  }

  void mount(Router router, ApiContract contract) {
    router.get("/v1/admin/closes").handler(contract.validate("listCloses")).handler(this::latestCloses);
    router.get("/v1/admin/orders/:id/log").handler(contract.validate("getOrderLog")).handler(this::orderLog);
    // the route "/dashboard" also matches "/dashboard/": only the bare one is redirected (relative links need the slash)
    router.get("/dashboard").handler(ctx -> {
      if ("/dashboard".equals(ctx.request().path())) {
        ctx.response().setStatusCode(301).putHeader("Location", "/dashboard/").end();
      } else {
        ctx.next();
      }
    });
    router.get("/dashboard/*").handler(StaticHandler.create("webroot/dashboard")
        .setIndexPage("index.html")
        .setDefaultContentEncoding("UTF-8")
        .setMaxAgeSeconds(60));
  }

  private void latestCloses(RoutingContext ctx) {
    int limit = limit(ctx);
    store.latestCloses(limit).onSuccess(closes -> {
      JsonArray body = new JsonArray();
      for (OrderStore.RecentClose close : closes) {
        body.add(new JsonObject()
            .put("orderId", Long.toString(close.orderId()))
            .put("reason", close.reason())
            .put("closeAt", iso(close.closeAt()))
            .put("closedAt", iso(close.closedAt()))
            .put("latenessMillis", close.latenessMillis()));
      }
      array(ctx, body);
    }).onFailure(ctx::fail);
  }

  private void orderLog(RoutingContext ctx) {
    store.orderLog(OrderRoutes.orderId(ctx)).onSuccess(lines -> array(ctx, toJson(lines))).onFailure(ctx::fail);
  }

  private static JsonArray toJson(List<OrderStore.LogLine> lines) {
    JsonArray body = new JsonArray();
    for (OrderStore.LogLine line : lines) {
      body.add(new JsonObject().put("event", line.event()).put("detail", line.detail()).put("at", iso(line.at())));
    }
    return body;
  }

  /** {@code limit}: 1 to 200, 20 when absent; anything else 400 {@code invalid_field}. */
  private static int limit(RoutingContext ctx) {
    List<String> values = ctx.queryParam("limit");
    if (values.isEmpty()) {
      return DEFAULT_LIMIT;
    }
    String value = values.get(0);
    if (values.size() > 1 || !LIMIT.matcher(value).matches()
        || Integer.parseInt(value) < 1 || Integer.parseInt(value) > MAX_LIMIT) {
      throw ApiException.badRequest("invalid_field", "'limit' must be a whole number from 1 to " + MAX_LIMIT);
    }
    return Integer.parseInt(value);
  }

  private static void array(RoutingContext ctx, JsonArray body) {
    ctx.response().setStatusCode(200).putHeader("Content-Type", "application/json").end(body.encode());
  }

  private static String iso(Instant instant) {
    return instant == null ? null : instant.toString();
  }
}
