package ordertimeout.http;

import io.vertx.core.json.JsonObject;
import ordertimeout.order.Digests;
import ordertimeout.order.OrderItem;
import ordertimeout.order.TimeoutPolicy;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * The body of POST /v1/orders as domain values. Its rules (fields, types, identifiers, item counts,
 * quantities, categories, timeouts and the configured limits) live in openapi.yaml and were checked by
 * {@link ContractChecks} before this runs; the one rule JSON Schema cannot say, each SKU at most once,
 * is checked here.
 */
record CreateOrderRequest(String userId, String category, List<OrderItem> items, Optional<Integer> timeoutSeconds) {

  /** {@code body}: the request body as the contract's check accepted it. */
  static CreateOrderRequest of(Object body, TimeoutPolicy policy) {
    JsonObject json = (JsonObject) body;
    String category = json.getString("category", policy.defaultCategory());
    Number timeout = (Number) json.getValue("timeoutSeconds");
    return new CreateOrderRequest(json.getString("userId"), category, items(json),
        timeout == null ? Optional.empty() : Optional.of(timeout.intValue()));
  }

  /** Tells a replay (same request) from a reuse of the key (another request): the canonical form, hashed. */
  String hash() {
    StringBuilder canonical = new StringBuilder()
        .append(userId).append('\n').append(category).append('\n')
        .append(timeoutSeconds.map(String::valueOf).orElse("-")).append('\n');
    items.forEach(item -> canonical.append(item.sku()).append('=').append(item.qty()).append('\n'));
    return HexFormat.of().formatHex(Digests.sha256(canonical.toString()));
  }

  /** Sorted by {@link OrderItem#BY_SKU}; integers may arrive as 2.0, which JSON Schema's {@code integer} takes. */
  private static List<OrderItem> items(JsonObject json) {
    List<OrderItem> items = new ArrayList<>();
    Set<String> skus = new HashSet<>();
    for (Object element : json.getJsonArray("items")) {
      JsonObject item = (JsonObject) element;
      String sku = item.getString("sku");
      if (!skus.add(sku)) {
        throw ApiException.badRequest("duplicate_sku", "SKU " + sku + " is listed twice; put its whole quantity in one item");
      }
      items.add(new OrderItem(sku, ((Number) item.getValue("qty")).intValue()));
    }
    items.sort(OrderItem.BY_SKU);
    return List.copyOf(items);
  }
}
