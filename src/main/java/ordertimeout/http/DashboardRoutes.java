package ordertimeout.http;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.StaticHandler;
import ordertimeout.store.OrderStore;

import java.time.Instant;
import java.util.List;

/**
 * The operator dashboard: the static page at /dashboard/ (no key: the page asks for the admin key and
 * sends it with its API calls), and the two admin reads it needs besides the stats and /metrics:
 * GET /v1/admin/closes?limit=n and GET /v1/admin/orders/{id}/log.
 */
final class DashboardRoutes {

  private final OrderStore store;

  DashboardRoutes(OrderStore store) {
    this.store = store;
  }

  void mount(Router router, ContractChecks contract) {
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
    int limit = ((Number) ContractChecks.parameter(ctx, "limit")).intValue();
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

  private static void array(RoutingContext ctx, JsonArray body) {
    OrderRoutes.json(ctx, 200, body);
  }

  private static String iso(Instant instant) {
    return instant == null ? null : instant.toString();
  }
}
