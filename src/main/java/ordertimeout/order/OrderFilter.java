package ordertimeout.order;

import io.vertx.core.json.JsonObject;

import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.List;
import java.util.function.Function;

/**
 * Which orders an operator's search or bulk action means: every field present must match (null: any). Times are
 * half-open ranges: {@code dueAfter <= closeAt < dueBefore}, {@code createdAfter <= createdAt < createdBefore}.
 */
public record OrderFilter(OrderStatus status, String client, String userId, String sku, Instant dueAfter, Instant dueBefore,
                          Instant createdAfter, Instant createdBefore) {

  /** The fields' names, as the API (query parameters and the bulk body's {@code filter}) spells them. */
  public static final List<String> FIELDS = List.of("status", "client", "userId", "sku", "dueAfter", "dueBefore",
      "createdAfter", "createdBefore");

  /** A filter the service cannot use: {@link #field} says which field, the message why. */
  public static final class Invalid extends RuntimeException {
    private final String field;

    Invalid(String field, String detail) {
      super(detail, null, false, false);
      this.field = field;
    }

    public String field() {
      return field;
    }
  }

  /** From the fields' text values ({@code value} null where absent); {@link Invalid} for a bad time or an empty range. */
  public static OrderFilter of(Function<String, String> value) {
    String status = value.apply("status");
    OrderStatus parsedStatus;
    try {
      parsedStatus = status == null ? null : OrderStatus.valueOf(status);
    } catch (IllegalArgumentException e) {
      throw new Invalid("status", "status is one of UNPAID, PAID, CLOSED, not '" + status + "'");
    }
    OrderFilter filter = new OrderFilter(parsedStatus, value.apply("client"), value.apply("userId"), value.apply("sku"),
        time(value, "dueAfter"), time(value, "dueBefore"), time(value, "createdAfter"), time(value, "createdBefore"));
    emptyRange("due", filter.dueAfter, filter.dueBefore);
    emptyRange("created", filter.createdAfter, filter.createdBefore);
    return filter;
  }

  /** From the JSON form ({@link #toJson}); the values must be strings. */
  public static OrderFilter fromJson(JsonObject json) {
    for (String name : json.fieldNames()) {
      if (!FIELDS.contains(name)) {
        throw new Invalid(name, "unknown filter field '" + name + "'");
      }
      if (!(json.getValue(name) instanceof String)) {
        throw new Invalid(name, "filter field '" + name + "' must be a string");
      }
    }
    return of(json::getString);
  }

  public JsonObject toJson() {
    JsonObject json = new JsonObject();
    put(json, "status", status == null ? null : status.name());
    put(json, "client", client);
    put(json, "userId", userId);
    put(json, "sku", sku);
    put(json, "dueAfter", dueAfter);
    put(json, "dueBefore", dueBefore);
    put(json, "createdAfter", createdAfter);
    put(json, "createdBefore", createdBefore);
    return json;
  }

  /** True when it matches every order. */
  public boolean isEmpty() {
    return toJson().isEmpty();
  }

  /** The same filter within one client's orders (a user key sees its client's orders only). */
  public OrderFilter withClient(String scope) {
    return new OrderFilter(status, scope, userId, sku, dueAfter, dueBefore, createdAfter, createdBefore);
  }

  private static void put(JsonObject json, String name, Object value) {
    if (value != null) {
      json.put(name, value.toString());
    }
  }

  private static Instant time(Function<String, String> value, String name) {
    String text = value.apply(name);
    if (text == null) {
      return null;
    }
    try {
      return OffsetDateTime.parse(text).toInstant();
    } catch (DateTimeParseException e) {
      throw new Invalid(name, name + " must be an ISO-8601 time with its offset (2026-12-01T09:00:00Z), not '" + text + "'");
    }
  }

  private static void emptyRange(String what, Instant after, Instant before) {
    if (after != null && before != null && !after.isBefore(before)) {
      throw new Invalid(what + "Before", what + "After must be before " + what + "Before");
    }
  }
}
