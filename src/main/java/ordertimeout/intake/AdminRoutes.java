package ordertimeout.intake;

import io.vertx.core.json.DecodeException;
import io.vertx.core.json.Json;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import ordertimeout.stats.ServiceStats;
import ordertimeout.store.OrderStore;
import ordertimeout.store.OrderStore.Stock;

import java.util.Set;

/** Admin routes besides the admin close: stock levels and the node's stats. */
final class AdminRoutes {
  private static final long MAX_AVAILABLE = 1_000_000_000_000L;

  private final OrderStore store;
  private final ServiceStats stats;

  AdminRoutes(OrderStore store, ServiceStats stats) {
    this.store = store;
    this.stats = stats;
  }

  void mount(Router router) {
    router.get("/v1/admin/inventory/:sku").handler(ctx -> store.stock(sku(ctx))
        .onSuccess(stock -> OrderRoutes.json(ctx, 200, toJson(stock)))
        .onFailure(ctx::fail));
    router.put("/v1/admin/inventory/:sku").handler(this::setAvailable);
    router.get("/v1/admin/stats").handler(ctx -> OrderRoutes.json(ctx, 200, stats.toJson()));
  }

  private void setAvailable(RoutingContext ctx) {
    String sku = sku(ctx);
    long available = available(ctx);
    store.setAvailable(sku, available)
        .onSuccess(stock -> OrderRoutes.json(ctx, 200, toJson(stock)))
        .onFailure(ctx::fail);
  }

  private static long available(RoutingContext ctx) {
    Object parsed;
    try {
      parsed = ctx.body().length() == 0 ? null : Json.decodeValue(ctx.body().buffer());
    } catch (DecodeException e) {
      throw ApiException.badRequest("malformed_json", "the request body is not valid JSON");
    }
    if (!(parsed instanceof JsonObject body)) {
      throw ApiException.badRequest("malformed_json", "the request body must be a JSON object {\"available\": n}");
    }
    for (String field : body.fieldNames()) {
      if (!Set.of("available").contains(field)) {
        throw ApiException.badRequest("unknown_field", "unknown field '" + field + "'");
      }
    }
    Object value = body.getValue("available");
    if (!(value instanceof Integer || value instanceof Long)
        || ((Number) value).longValue() < 0 || ((Number) value).longValue() > MAX_AVAILABLE) {
      throw ApiException.badRequest("invalid_field", "'available' must be a whole number from 0 to " + MAX_AVAILABLE);
    }
    return ((Number) value).longValue();
  }

  private static String sku(RoutingContext ctx) {
    String sku = ctx.pathParam("sku");
    if (!CreateOrderRequest.IDENTIFIER.matcher(sku).matches()) {
      throw ApiException.badRequest("invalid_sku", "a SKU is 1 to 64 letters, digits or . _ - : @");
    }
    return sku;
  }

  private static JsonObject toJson(Stock stock) {
    return new JsonObject().put("sku", stock.sku()).put("available", stock.available()).put("reserved", stock.reserved());
  }
}
