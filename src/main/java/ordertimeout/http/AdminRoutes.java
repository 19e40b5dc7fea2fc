package ordertimeout.http;

import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import ordertimeout.bus.Addresses;
import ordertimeout.metrics.NodeStats;
import ordertimeout.store.OrderStore.Stock;
import ordertimeout.store.OrderStore;
import ordertimeout.timer.OwnedShards;

import java.util.Set;

/** Admin routes besides the admin close: stock levels, the node's stats, reconciliation on demand. */
final class AdminRoutes {
  private static final long MAX_AVAILABLE = 1_000_000_000_000L;
  /** A reconciliation reads every unpaid order: it may take a while on a large database. */
  private static final DeliveryOptions RECONCILE = new DeliveryOptions().setSendTimeout(300_000);

  private final OrderStore store;
  private final NodeStats stats;
  private final OwnedShards owned;

  AdminRoutes(OrderStore store, NodeStats stats, OwnedShards owned) {
    this.store = store;
    this.stats = stats;
    this.owned = owned;
  }

  void mount(Router router, ApiContract contract) {
    router.get("/v1/admin/inventory/:sku").handler(contract.validate("getInventory")).handler(ctx -> store.stock(sku(ctx))
        .onSuccess(stock -> OrderRoutes.json(ctx, 200, toJson(stock)))
        .onFailure(ctx::fail));
    router.put("/v1/admin/inventory/:sku").handler(contract.validate("setInventory")).handler(this::setAvailable);
    router.get("/v1/admin/stats").handler(contract.validate("getStats")).handler(ctx -> OrderRoutes.json(ctx, 200, StatsJson.of(stats.snapshot(), owned)));
    router.post("/v1/admin/reconcile").handler(contract.validate("reconcile")).handler(this::reconcile);
  }

  private void reconcile(RoutingContext ctx) {
    boolean repair = repair(ctx);
    ctx.vertx().eventBus().<JsonObject>request(Addresses.RECONCILE, repair, RECONCILE)
        .onSuccess(report -> OrderRoutes.json(ctx, 200, report.body()))
        .onFailure(ctx::fail);
  }

  /** The optional body {@code {"repair": true|false}}; no body means false. */
  private static boolean repair(RoutingContext ctx) {
    if (ApiContract.body(ctx) == null) {
      return false;
    }
    JsonObject body = object(ctx, "{\"repair\": true}", Set.of("repair"));
    Object value = body.getValue("repair", false);
    if (!(value instanceof Boolean repair)) {
      throw ApiException.badRequest("invalid_field", "'repair' must be true or false");
    }
    return repair;
  }

  /**
   * The body (decoded by the contract's check, which refuses what is not JSON) as a JSON object with only
   * {@code fields}, or 400 {@code malformed_json} / {@code unknown_field}.
   */
  private static JsonObject object(RoutingContext ctx, String shape, Set<String> fields) {
    if (!(ApiContract.body(ctx) instanceof JsonObject body)) {
      throw ApiException.badRequest("malformed_json", "the request body must be a JSON object " + shape);
    }
    for (String field : body.fieldNames()) {
      if (!fields.contains(field)) {
        throw ApiException.badRequest("unknown_field", "unknown field '" + field + "'");
      }
    }
    return body;
  }

  private void setAvailable(RoutingContext ctx) {
    String sku = sku(ctx);
    long available = available(ctx);
    store.setAvailable(sku, available)
        .onSuccess(stock -> OrderRoutes.json(ctx, 200, toJson(stock)))
        .onFailure(ctx::fail);
  }

  private static long available(RoutingContext ctx) {
    JsonObject body = object(ctx, "{\"available\": n}", Set.of("available"));
    Long value = CreateOrderRequest.wholeNumber(body.getValue("available"));
    if (value == null || value < 0 || value > MAX_AVAILABLE) {
      throw ApiException.badRequest("invalid_field", "'available' must be a whole number from 0 to " + MAX_AVAILABLE);
    }
    return value;
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
