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


/** Admin routes besides the admin close: stock levels, the node's stats, reconciliation on demand. */
final class AdminRoutes {
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

  void mount(Router router, ContractChecks contract) {
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
    return ContractChecks.body(ctx) instanceof JsonObject body && body.getBoolean("repair", false);
  }

  private void setAvailable(RoutingContext ctx) {
    String sku = sku(ctx);
    long available = available(ctx);
    store.setAvailable(sku, available)
        .onSuccess(stock -> OrderRoutes.json(ctx, 200, toJson(stock)))
        .onFailure(ctx::fail);
  }

  private static long available(RoutingContext ctx) {
    return ((Number) ((JsonObject) ContractChecks.body(ctx)).getValue("available")).longValue();
  }

  private static String sku(RoutingContext ctx) {
    return (String) ContractChecks.parameter(ctx, "sku");
  }

  private static JsonObject toJson(Stock stock) {
    return new JsonObject().put("sku", stock.sku()).put("available", stock.available()).put("reserved", stock.reserved());
  }
}
