package ordertimeout.http;

import io.vertx.core.Future;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import ordertimeout.bus.Addresses;
import ordertimeout.bus.CancelTimers;
import ordertimeout.bus.DueOrders;
import ordertimeout.metrics.NodeStats;
import ordertimeout.order.Digests;
import ordertimeout.order.IdempotencyKey;
import ordertimeout.store.CloseFailures.Parked;
import ordertimeout.store.CloseFailures;
import ordertimeout.store.InventoryStore.Change;
import ordertimeout.store.InventoryStore.Stock;
import ordertimeout.store.InventoryStore;
import ordertimeout.store.OrderStore;
import ordertimeout.store.ReconciliationRuns;
import ordertimeout.timer.OwnedShards;

import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;


/**
 * Admin routes besides the admin close: stock levels and their changes, the node's stats, reconciliation on demand and
 * its latest report, parked orders and their retry.
 * A stock answer carries the row's version as its ETag; a PUT of an existing SKU must send it back in If-Match.
 */
final class AdminRoutes {
  /** A reconciliation reads every unpaid order: it may take a while on a large database. */
  private static final DeliveryOptions RECONCILE = new DeliveryOptions().setSendTimeout(300_000);
  /** The most available units a PUT may set, which an adjust may not add beyond: the document's rule. */
  private static final String MAX_AVAILABLE = "#/components/schemas/SetStock/properties/available/maximum";

  /** A retry waits for its close like the sweep's pages do. */
  private static final DeliveryOptions RETRY = new DeliveryOptions().setSendTimeout(60_000);

  private final InventoryStore inventory;
  private final CloseFailures closeFailures;
  private final OrderStore orders;
  private final ReconciliationRuns reconciliations;
  private final NodeStats stats;
  private final OwnedShards owned;

  AdminRoutes(InventoryStore inventory, CloseFailures closeFailures, OrderStore orders, ReconciliationRuns reconciliations,
              NodeStats stats, OwnedShards owned) {
    this.inventory = inventory;
    this.closeFailures = closeFailures;
    this.orders = orders;
    this.reconciliations = reconciliations;
    this.stats = stats;
    this.owned = owned;
  }

  void mount(Router router, ContractChecks contract) {
    long maxAvailable = ((Number) ApiDocument.at(contract.document().json(), MAX_AVAILABLE)).longValue();
    router.get("/v1/admin/inventory/:sku").handler(contract.validate("getInventory"))
        .handler(ctx -> respond(ctx, inventory.stock(sku(ctx))));
    router.put("/v1/admin/inventory/:sku").handler(contract.validate("setInventory")).handler(this::setAvailable);
    router.post("/v1/admin/inventory/:sku/adjust").handler(contract.validate("adjustInventory"))
        .handler(ctx -> adjust(ctx, maxAvailable));
    router.get("/v1/admin/inventory/:sku/log").handler(contract.validate("getInventoryLog")).handler(this::log);
    router.get("/v1/admin/stats").handler(contract.validate("getStats")).handler(ctx -> OrderRoutes.json(ctx, 200, StatsJson.of(stats.snapshot(), owned)));
    router.post("/v1/admin/reconcile").handler(contract.validate("reconcile")).handler(this::reconcile);
    router.get("/v1/admin/reconciliation/latest").handler(contract.validate("getLatestReconciliation")).handler(this::latestReconciliation);
    router.get("/v1/admin/orders/parked").handler(contract.validate("listParkedOrders")).handler(this::parked);
    router.post("/v1/admin/orders/:id/retry").handler(contract.validate("retryParkedOrder")).handler(this::retry);
  }

  private void latestReconciliation(RoutingContext ctx) {
    reconciliations.latest().onSuccess(run -> {
      if (run == null) {
        Problems.send(ctx, 404, "no_reconciliation_yet", "no reconciliation has finished yet");
      } else {
        OrderRoutes.json(ctx, 200, run);
      }
    }).onFailure(ctx::fail);
  }

  /** A page of parked orders by id; {@code next} is the cursor of the page after, null on the last. */
  private void parked(RoutingContext ctx) {
    int limit = ((Number) ContractChecks.parameter(ctx, "limit")).intValue();
    String cursor = (String) ContractChecks.parameter(ctx, "cursor");
    if (KeysetCursor.PARKED_ORDERS.isRawId(cursor)) {
      stats.rawCursorTaken("parked");
    }
    Long after = KeysetCursor.PARKED_ORDERS.lastShown(cursor);
    closeFailures.parked(after == null ? 0 : after, limit).onSuccess(page -> {
      JsonArray list = new JsonArray();
      page.items().forEach(parked -> list.add(toJson(parked)));
      String next = page.next() == null ? null : KeysetCursor.PARKED_ORDERS.of(page.next());
      OrderRoutes.json(ctx, 200, new JsonObject().put("orders", list).put("next", next));
    }).onFailure(ctx::fail);
  }

  private static JsonObject toJson(Parked parked) {
    return new JsonObject()
        .put("id", Long.toString(parked.orderId()))
        .put("client", parked.client())
        .put("userId", parked.userId())
        .put("closeAt", parked.closeAt().toString())
        .put("failures", parked.failures())
        .put("firstFailedAt", parked.firstFailedAt().toString())
        .put("lastFailedAt", parked.lastFailedAt().toString())
        .put("lastError", parked.lastError())
        .put("parkedAt", parked.parkedAt().toString());
  }

  /**
   * Unparks the order (its failure count starts again) and hands it to the close path at once: closed if due and the
   * database now takes the close; else it stays unpaid for the wheel and the sweep, and is parked again after as many
   * failures. Answers the order as it is after the attempt.
   */
  private void retry(RoutingContext ctx) {
    long id = OrderRoutes.orderId(ctx);
    closeFailures.unpark(id)
        .compose(unparked -> ctx.vertx().eventBus()
            .<Integer>request(Addresses.CLOSE_DUE, new DueOrders(new long[] {id}, DueOrders.Path.RETRY), RETRY))
        .compose(closed -> {
          if (closed.body() > 0) {
            ctx.vertx().eventBus().send(Addresses.TIMER_CANCEL, CancelTimers.one(id));
          }
          return orders.find(id, null);
        })
        .onSuccess(order -> OrderRoutes.json(ctx, 200, order.toJson()))
        .onFailure(ctx::fail);
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

  /** Without If-Match only a new SKU is set (created); with it only the version the caller read. */
  private void setAvailable(RoutingContext ctx) {
    String sku = sku(ctx);
    long available = ((Number) body(ctx).getValue("available")).longValue();
    String client = Auth.caller(ctx).client();
    String ifMatch = (String) ContractChecks.parameter(ctx, "If-Match");
    respond(ctx, ifMatch == null
        ? inventory.create(sku, available, client)
        : inventory.setIfVersion(sku, available, versions(ifMatch), client));
  }

  /**
   * The versions an If-Match names; null for {@code *} (any). It compares strongly: a weak tag ({@code W/"..."}), or
   * anything that is not a tag, matches nothing.
   */
  private static String[] versions(String ifMatch) {
    if (ifMatch.trim().equals("*")) {
      return null;
    }
    List<String> versions = new ArrayList<>();
    for (String tag : ifMatch.split(",")) {
      String trimmed = tag.trim();
      if (trimmed.length() >= 2 && trimmed.startsWith("\"") && trimmed.endsWith("\"")) {
        versions.add(trimmed.substring(1, trimmed.length() - 1));
      }
    }
    return versions.toArray(String[]::new);
  }

  private void adjust(RoutingContext ctx, long maxAvailable) {
    String sku = sku(ctx);
    long delta = ((Number) body(ctx).getValue("delta")).longValue();
    String key = (String) ContractChecks.parameter(ctx, "Idempotency-Key");
    String requestHash = HexFormat.of().formatHex(Digests.sha256("adjust", sku, Long.toString(delta)));
    respond(ctx, inventory.adjust(sku, delta, maxAvailable, new IdempotencyKey(Auth.caller(ctx).client(), key, requestHash)));
  }

  private void log(RoutingContext ctx) {
    int limit = ((Number) ContractChecks.parameter(ctx, "limit")).intValue();
    inventory.log(sku(ctx), limit).onSuccess(changes -> {
      JsonArray body = new JsonArray();
      changes.forEach(change -> body.add(toJson(change)));
      OrderRoutes.json(ctx, 200, body);
    }).onFailure(ctx::fail);
  }

  private static JsonObject toJson(Change change) {
    return new JsonObject().put("at", change.at().toString()).put("client", change.client()).put("operation", change.operation())
        .put("availableBefore", change.availableBefore()).put("availableAfter", change.availableAfter()).put("delta", change.delta());
  }

  /** The stock, with its version as a strong ETag (none on a replayed answer, whose row may have moved on since). */
  private static void respond(RoutingContext ctx, Future<Stock> stock) {
    stock.onSuccess(found -> {
      if (found.version() != null) {
        ctx.response().putHeader("ETag", '"' + found.version() + '"');
      }
      OrderRoutes.json(ctx, 200, found.toJson());
    }).onFailure(ctx::fail);
  }

  private static JsonObject body(RoutingContext ctx) {
    return (JsonObject) ContractChecks.body(ctx);
  }

  private static String sku(RoutingContext ctx) {
    return (String) ContractChecks.parameter(ctx, "sku");
  }
}
