package ordertimeout.http;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import ordertimeout.config.AppConfig;
import ordertimeout.order.Order;
import ordertimeout.order.OrderFilter;
import ordertimeout.store.OrderSearch;

import java.util.function.Function;

/**
 * Searches, newest first, in pages: GET /v1/admin/orders (admin: any client's orders, every filter) and GET /v1/orders
 * (the caller's client's orders, by user and status; an admin key sees every client's). A page's {@code next} is an
 * opaque cursor for the page after it, null after the last.
 */
final class SearchRoutes {
  static final String INVALID_FILTER = "invalid_filter";

  private final OrderSearch search;

  SearchRoutes(OrderSearch search) {
    this.search = search;
  }

  void mount(Router router, ContractChecks contract) {
    router.get("/v1/admin/orders").handler(contract.validate("searchOrders"))
        .handler(ctx -> page(ctx, filter(ctx, OrderFilter.FIELDS::contains)));
    router.get("/v1/orders").handler(contract.validate("listOrders"))
        .handler(ctx -> {
          AppConfig.ApiKey caller = Auth.caller(ctx);
          OrderFilter filter = filter(ctx, name -> name.equals("userId") || name.equals("status"));
          page(ctx, caller.role() == AppConfig.Role.ADMIN ? filter : filter.withClient(caller.client()));
        });
  }

  private void page(RoutingContext ctx, OrderFilter filter) {
    int limit = ((Number) ContractChecks.parameter(ctx, "limit")).intValue();
    Long below = KeysetCursor.ORDERS.lastShown((String) ContractChecks.parameter(ctx, "cursor"));
    search.page(filter, below, limit).onSuccess(page -> {
      JsonArray orders = new JsonArray();
      for (Order order : page.items()) orders.add(order.toJson());
      String next = page.next() == null ? null : KeysetCursor.ORDERS.of(page.next());
      OrderRoutes.json(ctx, 200, new JsonObject().put("orders", orders).put("next", next));
    }).onFailure(ctx::fail);
  }

  /** The filter of the query parameters that {@code accepted} names; 400 {@code invalid_filter} for a bad one. */
  static OrderFilter filter(RoutingContext ctx, java.util.function.Predicate<String> accepted) {
    return filter(name -> accepted.test(name) ? (String) ContractChecks.parameter(ctx, name) : null);
  }

  static OrderFilter filter(Function<String, String> value) {
    try {
      return OrderFilter.of(value);
    } catch (OrderFilter.Invalid e) {
      throw ApiException.badRequest(INVALID_FILTER, e.getMessage());
    }
  }
}
