package ordertimeout.http;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import ordertimeout.config.AppConfig;
import ordertimeout.order.Order;
import ordertimeout.order.OrderFilter;
import ordertimeout.store.OrderSearch;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.function.Function;
import java.util.regex.Pattern;

/**
 * Searches, newest first, in pages: GET /v1/admin/orders (admin: any client's orders, every filter) and GET /v1/orders
 * (the caller's client's orders, by user and status; an admin key sees every client's). A page's {@code next} is an
 * opaque cursor for the page after it, null after the last.
 */
final class SearchRoutes {
  static final String INVALID_FILTER = "invalid_filter";
  static final String INVALID_CURSOR = "invalid_cursor";
  private static final String CURSOR_PREFIX = "o1:";
  private static final Pattern CURSOR = Pattern.compile("o1:[0-9]{1,19}");

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
    Long below = cursor((String) ContractChecks.parameter(ctx, "cursor"));
    search.page(filter, below, limit).onSuccess(page -> {
      JsonArray orders = new JsonArray();
      for (Order order : page.items()) orders.add(order.toJson());
      OrderRoutes.json(ctx, 200, new JsonObject().put("orders", orders).put("next", page.next() == null ? null : cursor(page.next())));
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

  static String cursor(long lastId) {
    return Base64.getUrlEncoder().withoutPadding().encodeToString((CURSOR_PREFIX + lastId).getBytes(StandardCharsets.US_ASCII));
  }

  /** The id a cursor continues below; null for none; 400 {@code invalid_cursor} for anything this service did not hand out. */
  static Long cursor(String cursor) {
    if (cursor == null) {
      return null;
    }
    try {
      String text = new String(Base64.getUrlDecoder().decode(cursor), StandardCharsets.US_ASCII);
      if (CURSOR.matcher(text).matches()) {
        return Long.parseLong(text.substring(CURSOR_PREFIX.length()));
      }
    } catch (IllegalArgumentException e) {
      // not base64, or beyond 64 bits: invalid below
    }
    throw ApiException.badRequest(INVALID_CURSOR, "the cursor is not one this service handed out (pass a page's 'next' as it is)");
  }
}
