package ordertimeout.http;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import ordertimeout.config.AppConfig;
import ordertimeout.order.Digests;
import ordertimeout.order.OrderItem;
import ordertimeout.order.TimeoutPolicy;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The body of POST /v1/orders, strictly validated: unknown fields, wrong types, empty or oversized
 * item lists, bad quantities and timeouts outside the policy all answer 400 with a stable code. The
 * contract's check (openapi.yaml) has refused most of these already; what it cannot say (a SKU listed
 * twice) and the configured limits are checked here again, so this class alone still guards the store.
 */
record CreateOrderRequest(String userId, String category, List<OrderItem> items, Optional<Integer> timeoutSeconds) {
  private static final Set<String> FIELDS = Set.of("userId", "category", "items", "timeoutSeconds");
  private static final Set<String> ITEM_FIELDS = Set.of("sku", "qty");
  /** User ids and SKUs: 1 to 64 characters, letters, digits and . _ - : @ */
  static final Pattern IDENTIFIER = Pattern.compile("[A-Za-z0-9._:@-]{1,64}");

  /** {@code body}: the request body decoded from JSON (null when there was none). */
  static CreateOrderRequest parse(Object body, TimeoutPolicy policy, AppConfig.Orders limits) {
    JsonObject json = object(body);
    rejectUnknown(json, FIELDS, "");
    String userId = identifier(json.getValue("userId"), "userId");
    String category = category(json.getValue("category"), policy);
    List<OrderItem> items = items(json.getValue("items"), limits);
    Optional<Integer> timeout = timeout(json.getValue("timeoutSeconds"), policy);
    return new CreateOrderRequest(userId, category, items, timeout);
  }

  /** Tells a replay (same request) from a reuse of the key (another request): the canonical form, hashed. */
  String hash() {
    StringBuilder canonical = new StringBuilder()
        .append(userId).append('\n').append(category).append('\n')
        .append(timeoutSeconds.map(String::valueOf).orElse("-")).append('\n');
    items.forEach(item -> canonical.append(item.sku()).append('=').append(item.qty()).append('\n'));
    return HexFormat.of().formatHex(Digests.sha256(canonical.toString()));
  }

  private static JsonObject object(Object parsed) {
    if (!(parsed instanceof JsonObject object)) {
      throw ApiException.badRequest("malformed_json", "the request body must be a JSON object");
    }
    return object;
  }

  private static void rejectUnknown(JsonObject json, Set<String> allowed, String prefix) {
    for (String field : json.fieldNames()) {
      if (!allowed.contains(field)) {
        throw ApiException.badRequest("unknown_field", "unknown field '" + prefix + field + "'");
      }
    }
  }

  private static String identifier(Object value, String field) {
    if (!(value instanceof String text) || !IDENTIFIER.matcher(text).matches()) {
      throw ApiException.badRequest("invalid_field",
          "'" + field + "' must be a string of 1 to 64 letters, digits or . _ - : @");
    }
    return text;
  }

  private static String category(Object value, TimeoutPolicy policy) {
    if (value == null) {
      return policy.defaultCategory();
    }
    if (!(value instanceof String category)) {
      throw ApiException.badRequest("invalid_field", "'category' must be a string");
    }
    if (!policy.knowsCategory(category)) {
      throw ApiException.badRequest("unknown_category", "unknown category '" + category + "'");
    }
    return category;
  }

  private static List<OrderItem> items(Object value, AppConfig.Orders limits) {
    if (!(value instanceof JsonArray array) || array.isEmpty() || array.size() > limits.maxItems()) {
      throw ApiException.badRequest("invalid_field", "'items' must be a list of 1 to " + limits.maxItems() + " items");
    }
    List<OrderItem> items = new ArrayList<>(array.size());
    Set<String> skus = new HashSet<>();
    for (int i = 0; i < array.size(); i++) {
      String at = "items[" + i + "]";
      if (!(array.getValue(i) instanceof JsonObject item)) {
        throw ApiException.badRequest("invalid_field", "'" + at + "' must be an object {sku, qty}");
      }
      rejectUnknown(item, ITEM_FIELDS, at + ".");
      String sku = identifier(item.getValue("sku"), at + ".sku");
      long qty = wholeNumber(item.getValue("qty"), at + ".qty");
      if (qty < 1 || qty > limits.maxQty()) {
        throw ApiException.badRequest("invalid_field", "'" + at + ".qty' must be between 1 and " + limits.maxQty());
      }
      if (!skus.add(sku)) {
        throw ApiException.badRequest("duplicate_sku", "SKU " + sku + " is listed twice; put its whole quantity in one item");
      }
      items.add(new OrderItem(sku, (int) qty));
    }
    items.sort(Comparator.comparing(OrderItem::sku));
    return List.copyOf(items);
  }

  private static Optional<Integer> timeout(Object value, TimeoutPolicy policy) {
    if (value == null) {
      return Optional.empty();
    }
    long seconds = wholeNumber(value, "timeoutSeconds");
    if (!policy.allowsTimeout(seconds)) {
      throw ApiException.badRequest("invalid_timeout", "'timeoutSeconds' is outside the allowed range");
    }
    return Optional.of((int) seconds);
  }

  private static long wholeNumber(Object value, String field) {
    Long whole = wholeNumber(value);
    if (whole == null) {
      throw ApiException.badRequest("invalid_field", "'" + field + "' must be a whole number");
    }
    return whole;
  }

  /**
   * A JSON number without a fractional part, within 64 bits; else null. {@code 2.0} is 2: JSON Schema's
   * {@code integer}, which the contract uses, takes it too.
   */
  static Long wholeNumber(Object value) {
    if (value instanceof Integer || value instanceof Long) {
      return ((Number) value).longValue();
    }
    if (value instanceof Double || value instanceof Float || value instanceof BigDecimal || value instanceof BigInteger) {
      try {
        return new BigDecimal(value.toString()).longValueExact();
      } catch (ArithmeticException | NumberFormatException e) {
        return null;
      }
    }
    return null;
  }
}
